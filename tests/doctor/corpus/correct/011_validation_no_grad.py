# Correct: validation under torch.no_grad() with model.eval(), then model.train() each epoch
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 64)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


torch.manual_seed(110)
X = torch.randn(240, 8)
y = X @ torch.randn(8, 1)
train_loader = DataLoader(TensorDataset(X[:192], y[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(X[192:], y[192:]), batch_size=48)
model = MLP()
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
    with torch.no_grad():
        val_loss = sum(criterion(model(xb), yb).item() for xb, yb in val_loader)
    print(epoch, val_loss / len(val_loader))
