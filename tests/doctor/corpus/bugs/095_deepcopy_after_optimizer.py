# From: skorch-dev/skorch#317: "module weights don't update after copy.deepcopy"
# mypy: ignore-errors
import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(95)
module = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
net = copy.deepcopy(module)  # doctor: no_gradient

X, y = torch.randn(96, 6), torch.randint(0, 2, (96,))
for epoch in range(3):
    for i in range(0, 96, 32):
        optimizer.zero_grad()
        loss = F.cross_entropy(net(X[i : i + 32]), y[i : i + 32])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
