# Correct: a StepLR scheduler stepped once per epoch, after that epoch's optimizer steps
# mypy: ignore-errors
import torch
from torch import nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(115)
X = torch.randn(128, 6)
y = X @ torch.randn(6, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = StepLR(optimizer, step_size=2, gamma=0.5)
criterion = nn.MSELoss()

for epoch in range(5):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    scheduler.step()
    print(epoch, scheduler.get_last_lr(), loss.item())
