# From: Stack Overflow question: 'BatchNorm running stats frozen after my evaluate() function'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(30)
X = torch.randn(240, 8)
y = X @ torch.randn(8, 1)
train_loader = DataLoader(TensorDataset(X[:192], y[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(X[192:], y[192:]), batch_size=48)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def evaluate(model, loader, criterion):
    model.eval()
    with torch.no_grad():
        return sum(criterion(model(xb), yb).item() for xb, yb in loader) / len(loader)


model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for epoch in range(4):
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()  # doctor: eval_while_training
        optimizer.step()
    print(epoch, evaluate(model, val_loader, criterion))
