# From: a GitHub issue: 'gradient clipping has no effect' (clip_grad_norm_ called before backward)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(7)
X = torch.randn(160, 8)
y = torch.randint(0, 4, (160,))
loader = DataLoader(TensorDataset(X, y), batch_size=20, shuffle=True)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # doctor: clip_before_backward
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
