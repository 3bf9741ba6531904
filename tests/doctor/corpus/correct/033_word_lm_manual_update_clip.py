# Correct: pytorch/examples word_language_model: zero_grad, clip, p.data.add_(p.grad, alpha=-lr)
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(132)
VOCAB, BPTT, BATCH = 24, 8, 4


class RNNModel(nn.Module):
    """Embedding, a two-layer LSTM and a decoder to log-probabilities."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, tokens, hidden):
        emb = self.drop(self.encoder(tokens))
        out, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(out)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        zeros = torch.zeros(self.nlayers, bsz, self.nhid)
        return zeros, zeros.clone()


def batchify(stream, bsz):
    n = stream.size(0) // bsz
    return stream[: n * bsz].view(bsz, -1).t().contiguous()  # (time, batch)


def get_batch(source, i):
    length = min(BPTT, len(source) - 1 - i)
    return source[i : i + length], source[i + 1 : i + 1 + length].reshape(-1)


def repackage_hidden(h):
    """Cut the hidden state off from the graph of the batches before."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


# a token stream with structure: a repeating phrase with some noise
phrase = torch.randint(0, VOCAB, (12,))
stream = phrase.repeat(30)
noise = torch.rand(stream.shape) < 0.1
stream[noise] = torch.randint(0, VOCAB, (int(noise.sum()),))
train_data = batchify(stream[:288], BATCH)
val_data = batchify(stream[288:], BATCH)

model = RNNModel(VOCAB, 16, 32, 2, dropout=0.2)
criterion = nn.NLLLoss()
clip = 0.25


def evaluate(source):
    model.eval()
    total, hidden = 0.0, model.init_hidden(BATCH)
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, BPTT):
            data, targets = get_batch(source, i)
            output, hidden = model(data, hidden)
            total += len(data) * criterion(output, targets).item()
            hidden = repackage_hidden(hidden)
    return total / (len(source) - 1)


def train_epoch(lr):
    model.train()
    total_loss, batches = 0.0, 0
    hidden = model.init_hidden(BATCH)
    for i in range(0, train_data.size(0) - 1, BPTT):
        data, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        batches += 1
    return total_loss / batches


lr, best = 5.0, None
for epoch in range(1, 4):
    train_loss = train_epoch(lr)
    val_loss = evaluate(val_data)
    print(f"epoch {epoch} | lr {lr:.2f} | train {train_loss:.3f} | valid {val_loss:.3f}")
    if best is None or val_loss < best:
        best = val_loss
    else:
        lr /= 4.0
