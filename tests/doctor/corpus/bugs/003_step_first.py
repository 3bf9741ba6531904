# From: PyTorch forum thread: 'model does not learn, optimizer.step() before loss.backward()'
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(2)
X = torch.randn(200, 6)
y = X.sum(dim=1, keepdim=True)

model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.MSELoss()

for epoch in range(5):
    for i in range(0, len(X), 20):
        xb, yb = X[i : i + 20], y[i : i + 20]
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        optimizer.step()  # doctor: step_first
        loss.backward()
    print(epoch, loss.item())
