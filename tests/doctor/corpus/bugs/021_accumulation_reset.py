# From: PyTorch forum thread: 'gradient accumulation gives the same result as batch size 8'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(20)
X = torch.randn(256, 8)
y = X @ torch.randn(8, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=8, shuffle=True)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()
accumulation_steps = 4

for epoch in range(2):
    for i, (xb, yb) in enumerate(loader):
        optimizer.zero_grad()  # doctor: accumulation_reset
        loss = criterion(model(xb), yb) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
    print(epoch, loss.item())
