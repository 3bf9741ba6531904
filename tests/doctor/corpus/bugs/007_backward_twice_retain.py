# From: PyTorch forum thread: 'added retain_graph=True to fix the error, now gradients are doubled'
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(6)
X = torch.randn(200, 4)
y = (X**2).sum(dim=1, keepdim=True)

model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.MSELoss()
log_every = 5

for epoch in range(4):
    for i in range(0, 200, 25):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 25]), y[i : i + 25])
        loss.backward(retain_graph=True)
        grad_norm = sum(p.grad.norm() ** 2 for p in model.parameters()) ** 0.5
        if i % log_every == 0:
            print(f"grad norm {grad_norm.item():.3f}")
        loss.backward()  # doctor: backward_twice_retain
        optimizer.step()
    print(epoch, loss.item())
