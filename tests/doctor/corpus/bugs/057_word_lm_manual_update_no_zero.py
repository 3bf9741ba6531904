# From: pytorch/examples word_language_model with model.zero_grad() dropped (manual update, clip)
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(156)
VOCAB, BPTT, BATCH = 20, 6, 4


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid):
        super().__init__()
        self.ntoken = ntoken
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.GRU(ninp, nhid)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid = nhid

    def forward(self, tokens, hidden):
        out, hidden = self.rnn(self.encoder(tokens), hidden)
        return F.log_softmax(self.decoder(out).view(-1, self.ntoken), dim=1), hidden

    def init_hidden(self, bsz):
        return torch.zeros(1, bsz, self.nhid)


stream = torch.arange(240) * 7 % VOCAB
train_data = stream.view(BATCH, -1).t().contiguous()
model = RNNModel(VOCAB, 12, 24)
criterion = nn.NLLLoss()
lr, clip = 2.0, 0.25

for epoch in range(2):
    model.train()
    hidden = model.init_hidden(BATCH)
    for i in range(0, train_data.size(0) - 1, BPTT):
        length = min(BPTT, train_data.size(0) - 1 - i)
        data, targets = train_data[i : i + length], train_data[i + 1 : i + 1 + length].reshape(-1)
        hidden = hidden.detach()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()  # doctor: skip_zero_grad
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
    print(epoch, loss.item())
