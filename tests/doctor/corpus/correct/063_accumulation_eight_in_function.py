# Correct: accumulation over 8 micro-batches in train_epoch(), (loss / 8).backward(), one step
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train_epoch(model, loader, optimizer, criterion, accumulation_steps):
    model.train()
    for i, (xb, yb) in enumerate(loader):
        loss = criterion(model(xb), yb)
        (loss / accumulation_steps).backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    return loss.item()


torch.manual_seed(76)
X = torch.randn(256, 5)
y = (X[:, 0] - X[:, 2] > 0).float().unsqueeze(1)
loader = DataLoader(TensorDataset(X, y), batch_size=4, shuffle=True)  # 64 micro-batches

model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
criterion = nn.BCEWithLogitsLoss()

optimizer.zero_grad()
for epoch in range(3):
    print(epoch, train_epoch(model, loader, optimizer, criterion, accumulation_steps=8))
