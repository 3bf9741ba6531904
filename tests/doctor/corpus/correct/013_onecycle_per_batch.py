# Correct: OneCycleLR stepped once per batch, after optimizer.step()
# mypy: ignore-errors
import torch
from torch import nn
from torch.optim.lr_scheduler import OneCycleLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(112)
X = torch.randn(160, 8)
y = torch.randint(0, 2, (160,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
epochs = 3

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scheduler = OneCycleLR(optimizer, max_lr=0.1, epochs=epochs, steps_per_epoch=len(loader))
criterion = nn.CrossEntropyLoss()

for epoch in range(epochs):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        scheduler.step()
    print(epoch, scheduler.get_last_lr()[0], loss.item())
