# mypy: ignore-errors
"""After pytorch/examples time_sequence_prediction: two LSTMCells in double precision learn sine
waves, LBFGS stepping through a closure (max_iter 10: ten forwards and backwards a step).

    python bench/loops/lbfgs_sine.py STEPS
"""

import sys

import torch
from torch import nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
torch.manual_seed(0)
T, N, HIDDEN = 60, 16, 24
phase = torch.randint(-20, 20, (N, 1)).double()
waves = torch.sin((torch.arange(T).double() + phase) / 8.0)
inputs, targets = waves[3:, :-1], waves[3:, 1:]


class Sequence(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell1 = nn.LSTMCell(1, HIDDEN)
        self.cell2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = c1 = torch.zeros(x.size(0), HIDDEN, dtype=torch.double)
        h2 = c2 = torch.zeros(x.size(0), HIDDEN, dtype=torch.double)
        outs = []
        for column in x.split(1, dim=1):
            h1, c1 = self.cell1(column, (h1, c1))
            h2, c2 = self.cell2(h1, (h2, c2))
            outs.append(self.head(h2))
        return torch.cat(outs, dim=1)


model = Sequence().double()
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8, max_iter=10)
for step in range(STEPS):

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        print(step, criterion(model(inputs), targets).item())
