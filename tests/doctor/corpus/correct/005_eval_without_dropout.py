# Correct: eval() left on after validation, in a model with no dropout or batch norm (no effect)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(104)
X = torch.randn(200, 6)
y = X @ torch.randn(6, 1)
train_loader = DataLoader(TensorDataset(X[:160], y[:160]), batch_size=16, shuffle=True)
val_loader = DataLoader(TensorDataset(X[160:], y[160:]), batch_size=40)

model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for epoch in range(3):
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val = sum(criterion(model(xb), yb).item() for xb, yb in val_loader)
    print(epoch, val)
