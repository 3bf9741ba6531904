# From: PyTorch forum thread: 'loss becomes inf then nan after a few iterations' (lr far too high)
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(25)
X = 10 * torch.randn(256, 8)
y = X @ torch.randn(8, 1)

model = nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
criterion = nn.MSELoss()

for epoch in range(5):
    for i in range(0, 256, 32):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 32]), y[i : i + 32])
        loss.backward()  # doctor: nonfinite
        optimizer.step()
    print(epoch, loss.item())
