# Correct: the custom layer's forward uses the parameters, not their .data
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units) * 0.1)
        self.bias = nn.Parameter(torch.zeros(units))

    def forward(self, X):
        linear = torch.matmul(X, self.weight) + self.bias
        return F.relu(linear)


torch.manual_seed(96)
net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), MyLinear(64, 8), nn.Linear(8, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
X, y = torch.randn(128, 20), torch.randn(128, 1)
for epoch in range(3):
    for i in range(0, 128, 32):
        optimizer.zero_grad()
        loss = F.mse_loss(net(X[i : i + 32]), y[i : i + 32])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
