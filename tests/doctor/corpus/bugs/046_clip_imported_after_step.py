# From: a GitHub issue: 'grad clipping flag is a no-op' (clip_grad_norm_ after the step)
# mypy: ignore-errors
import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(45)
X = torch.randn(160, 8)
y = X @ torch.randn(8, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()
clip = 1.0

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        if clip:
            clip_grad_norm_(model.parameters(), clip)  # doctor: clip_after_step
    print(epoch, loss.item())
