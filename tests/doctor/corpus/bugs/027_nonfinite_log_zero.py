# From: Stack Overflow question: 'RMSLE loss is nan from the first batch' (log of a ReLU output)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(26)
X = torch.randn(160, 6)
y = torch.exp(X[:, :1] * 0.5)
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1), nn.ReLU())
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def msle(pred, target):
    return ((torch.log(pred) - torch.log(target)) ** 2).mean()


for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = msle(model(xb), yb)
        loss.backward()  # doctor: nonfinite
        optimizer.step()
    print(epoch, loss.item())
