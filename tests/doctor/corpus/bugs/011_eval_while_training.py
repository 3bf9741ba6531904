# From: PyTorch forum thread: 'accuracy drops after the first epoch' (model.eval() never undone)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(10)
X = torch.randn(200, 10)
y = (X[:, 0] > 0).long()
train_loader = DataLoader(TensorDataset(X[:160], y[:160]), batch_size=16, shuffle=True)
val_loader = DataLoader(TensorDataset(X[160:], y[160:]), batch_size=40)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


model = MLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

model.train()
for epoch in range(3):
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()  # doctor: eval_while_training
        optimizer.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in val_loader:
            correct += (model(xb).argmax(dim=1) == yb).sum().item()
    print(epoch, correct / 40)
