# Correct: accumulation over 2 micro-batches, each MSELoss mean divided by 2 before its backward
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(74)
X = torch.randn(256, 8)
y = X @ torch.randn(8, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)  # 16 micro-batches

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
criterion = nn.MSELoss()
accumulation_steps = 2

optimizer.zero_grad()
for epoch in range(3):
    for i, (xb, yb) in enumerate(loader):
        loss = criterion(model(xb), yb)
        (loss / accumulation_steps).backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    print(epoch, loss.item())
