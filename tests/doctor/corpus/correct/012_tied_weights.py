# Correct: tied weights, an embedding and the output layer sharing one Parameter
# mypy: ignore-errors
import torch
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        self.out.weight = self.embed.weight  # tied

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.mix(self.embed(tokens))))


torch.manual_seed(111)
vocab = 50
tokens = torch.randint(0, vocab, (64, 9))
model = TinyLM(vocab, 16)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    for batch in tokens.split(8):
        inputs, targets = batch[:, :-1], batch[:, 1:]
        optimizer.zero_grad()
        logits = model(inputs)
        loss = criterion(logits.reshape(-1, vocab), targets.reshape(-1))
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
