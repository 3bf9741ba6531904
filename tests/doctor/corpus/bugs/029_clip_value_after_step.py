# From: a GitHub issue: 'clip_grad_value_ has no effect on training' (called after optimizer.step)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(28)
X = torch.randn(160, 10)
y = torch.randint(0, 2, (160,))
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)  # doctor: clip_after_step
    print(epoch, loss.item())
