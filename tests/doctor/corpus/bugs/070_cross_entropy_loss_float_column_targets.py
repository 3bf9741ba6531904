# From: cnulab/RealNet#101: CrossEntropyLoss over a single class output stays at 0
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(170)
X = torch.randn(360, 6)
y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).float().unsqueeze(1)  # (N, 1) of 0.0 / 1.0
model = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 24), nn.ReLU(), nn.Linear(24, 1))
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(5):
    for xb, yb in zip(X.split(45), y.split(45), strict=True):
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)  # doctor: single_class_cross_entropy
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
