# Correct: an EMA copy of the weights updated under no_grad, losses kept as loss.detach()
# mypy: ignore-errors
import copy

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(123)
X = torch.randn(192, 8)
y = torch.randint(0, 3, (192,))
loader = DataLoader(TensorDataset(X, y), batch_size=24, shuffle=True)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
ema = copy.deepcopy(model).requires_grad_(False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
losses = []

for epoch in range(3):
    for xb, yb in loader:
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        with torch.no_grad():
            for e, p in zip(ema.parameters(), model.parameters(), strict=True):
                e.mul_(0.99).add_(p, alpha=0.01)
        losses.append(loss.detach())
    print(epoch, torch.stack(losses).mean().item())
