# From: Stack Overflow question: 'CUDA out of memory during validation' (no torch.no_grad())
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(11)
X = torch.randn(240, 8)
y = X @ torch.randn(8, 1)
train_loader = DataLoader(TensorDataset(X[:192], y[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(X[192:], y[192:]), batch_size=48)

model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for epoch in range(4):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    model.eval()
    val_loss = 0.0
    for xb, yb in val_loader:
        pred = model(xb)  # doctor: validation_with_grad
        val_loss += criterion(pred, yb).item()
    print(epoch, val_loss / len(val_loader))
