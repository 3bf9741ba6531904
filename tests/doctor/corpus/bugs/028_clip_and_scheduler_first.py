# From: a GitHub issue: an old training script clips before backward and steps the scheduler first
# mypy: ignore-errors
import torch
from torch import nn
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(27)
X = torch.randn(160, 8)
y = X[:, :1] * 2
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = CosineAnnealingLR(optimizer, T_max=20)
criterion = nn.MSELoss()

for epoch in range(3):
    for xb, yb in loader:
        scheduler.step()  # doctor: scheduler_before_step
        optimizer.zero_grad(set_to_none=False)
        loss = criterion(model(xb), yb)
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)  # doctor: clip_before_backward
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
