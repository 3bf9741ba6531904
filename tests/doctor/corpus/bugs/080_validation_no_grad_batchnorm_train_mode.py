# From: PyTorch forum thread: "'model.eval()' vs 'with torch.no_grad()'" (BatchNorm1d, no eval())
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(80)
X = torch.randn(256, 12)
y = X @ torch.randn(12, 1) + 0.1 * torch.randn(256, 1)
train_loader = DataLoader(TensorDataset(X[:192], y[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(X[192:], y[192:]), batch_size=16)

model = nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 1))
bn = model[1]
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.MSELoss()

for epoch in range(4):
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    before = bn.running_mean.clone()
    val_loss = 0.0
    with torch.no_grad():
        for xv, yv in val_loader:
            val_out = model(xv)  # doctor: validation_in_train_mode
            val_loss += criterion(val_out, yv).item()
    moved = (bn.running_mean - before).abs().max().item()
    print(epoch, val_loss / len(val_loader), "running_mean moved in validation by", moved)
