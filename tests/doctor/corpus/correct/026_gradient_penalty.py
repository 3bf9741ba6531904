# Correct: an input-gradient penalty, torch.autograd.grad(create_graph=True), then one backward
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(125)
X = torch.randn(160, 6)
y = torch.sin(X[:, :1]) + X[:, 1:2]
model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
penalty_weight = 0.1

for epoch in range(3):
    for i in range(0, 160, 20):
        xb = X[i : i + 20].clone().requires_grad_(True)
        optimizer.zero_grad()
        pred = model(xb)
        fit = nn.functional.mse_loss(pred, y[i : i + 20])
        (grad_x,) = torch.autograd.grad(pred.sum(), xb, create_graph=True)
        loss = fit + penalty_weight * grad_x.pow(2).sum(dim=1).mean()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
