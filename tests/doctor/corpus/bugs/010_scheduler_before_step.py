# From: PyTorch forum thread: 'Detected call of lr_scheduler.step() before optimizer.step()'
# mypy: ignore-errors
import torch
from torch import nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(9)
X = torch.randn(128, 6)
y = torch.randint(0, 2, (128,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    scheduler.step()  # doctor: scheduler_before_step
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, scheduler.get_last_lr(), loss.item())
