# From: Lightning-AI/pytorch-lightning#5034: the scheduler's optimizer is not the one that steps
# mypy: ignore-errors
import torch
from torch import nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(71)
X = torch.randn(160, 8)
y = (X[:, 0] + X[:, 1] > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # switched to Adam, same name

for epoch in range(4):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    scheduler.step()  # doctor: scheduler_other_optimizer
    print(epoch, optimizer.param_groups[0]["lr"], loss.item())
