# From: Lightning manual optimization docs without zero_grad: step(closure), backward before it
# mypy: ignore-errors
import torch
from torch import nn


class WrappedOptimizer:
    """What a framework's optimizer wrapper does in manual optimization: step through a closure
    that only returns (the user already ran the backward)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def step(self):
        def closure():
            return None

        return self.optimizer.step(closure)

    def zero_grad(self):
        self.optimizer.zero_grad()


class LitRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        self.opt = WrappedOptimizer(torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.9))

    def training_step(self, batch):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        loss.backward()  # doctor: skip_zero_grad
        self.opt.step()
        return loss


torch.manual_seed(150)
X = torch.randn(192, 8)
y = X @ torch.randn(8, 1)
module = LitRegressor()
for epoch in range(3):
    for i in range(0, 192, 24):
        loss = module.training_step((X[i : i + 24], y[i : i + 24]))
    print(epoch, loss.item())
