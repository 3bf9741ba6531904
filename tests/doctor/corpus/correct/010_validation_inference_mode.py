# Correct: validation under torch.inference_mode() with model.eval(), model.train() again after
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(109)
X = torch.randn(240, 10)
y = torch.randint(0, 3, (240,))
train_loader = DataLoader(TensorDataset(X[:192], y[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(X[192:], y[192:]), batch_size=24)

model = nn.Sequential(
    nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 3)
)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()


def evaluate() -> float:
    model.eval()
    correct = 0
    with torch.inference_mode():
        for xb, yb in val_loader:
            correct += (model(xb).argmax(dim=1) == yb).sum().item()
    model.train()
    return correct / 48


for epoch in range(4):
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, evaluate())
