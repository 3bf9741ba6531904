# From: Stack Overflow question: 'loss is nan from the first batch' (standardized a constant column)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(33)
X = torch.randn(160, 6)
X[:, 5] = 1.0  # a constant feature
y = X[:, :2].sum(dim=1, keepdim=True)
X = (X - X.mean(dim=0)) / X.std(dim=0)
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for epoch in range(2):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()  # doctor: nonfinite
        optimizer.step()
    print(epoch, loss.item())
