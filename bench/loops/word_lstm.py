# mypy: ignore-errors
"""After pytorch/examples word_language_model: a word-level LSTM on batchified text, truncated
backpropagation through time (the hidden state detached each batch), gradient clipping and a
hand-written SGD update of every parameter (``p.data.add_(p.grad, alpha=-lr)``).

    python bench/loops/word_lstm.py STEPS
"""

import sys

import torch
from torch import nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
torch.manual_seed(0)
VOCAB, EMBED, HIDDEN, BPTT, BATCH = 2000, 64, 128, 20, 16
# a synthetic "corpus": word ids with some order in them (a noisy walk over the vocabulary)
steps = torch.randint(-3, 4, (BATCH * (STEPS + 1) * BPTT + 1,))
corpus = steps.cumsum(0).remainder(VOCAB)
data = corpus[: (corpus.numel() - 1) // BATCH * BATCH].view(BATCH, -1).t().contiguous()


class WordModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Embedding(VOCAB, EMBED)
        self.rnn = nn.LSTM(EMBED, HIDDEN, num_layers=2, dropout=0.2)
        self.decoder = nn.Linear(HIDDEN, VOCAB)

    def forward(
        self, x: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out).view(-1, VOCAB), hidden


model = WordModel()
criterion = nn.CrossEntropyLoss()
lr = 5.0
hidden = (torch.zeros(2, BATCH, HIDDEN), torch.zeros(2, BATCH, HIDDEN))
model.train()
for step in range(STEPS):
    i = step * BPTT
    x, y = data[i : i + BPTT], data[i + 1 : i + 1 + BPTT].reshape(-1)
    hidden = (hidden[0].detach(), hidden[1].detach())
    model.zero_grad()
    output, hidden = model(x, hidden)
    loss = criterion(output, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    if step % 10 == 0:
        print(step, loss.item())
