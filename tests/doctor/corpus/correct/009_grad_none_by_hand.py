# Correct: the gradients cleared by hand, p.grad = None for every parameter, at the top
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(108)
X = torch.randn(200, 5)
y = torch.sin(X[:, :1])
model = nn.Sequential(nn.Linear(5, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.MSELoss()

for epoch in range(3):
    for i in range(0, 200, 25):
        for p in model.parameters():
            p.grad = None
        loss = criterion(model(X[i : i + 25]), y[i : i + 25])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
