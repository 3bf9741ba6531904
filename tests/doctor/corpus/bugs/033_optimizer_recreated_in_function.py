# From: a GitHub issue: 'momentum has no effect, train_epoch() builds its own optimizer'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train_epoch(model, loader, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr, momentum=0.9)  # doctor: optimizer_recreated
    criterion = nn.MSELoss()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    return loss.item()


torch.manual_seed(32)
X = torch.randn(128, 4)
y = X.prod(dim=1, keepdim=True)
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
for epoch in range(4):
    print(epoch, train_epoch(model, loader, lr=0.01 * 0.9**epoch))
