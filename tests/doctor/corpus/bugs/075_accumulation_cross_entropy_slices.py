# From: hirofumi0810/neural_sp#168: 'accum_grad loss error' (loss not divided by the steps)
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(75)
X = torch.randn(384, 12)
y = (X[:, :3].sum(dim=1) > 0).long() + (X[:, 3] > 1).long()

model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
accum_grad = 4
micro_batch = 8

for epoch in range(3):
    optimizer.zero_grad()
    for step, i in enumerate(range(0, len(X), micro_batch)):
        loss = F.cross_entropy(model(X[i : i + micro_batch]), y[i : i + micro_batch])
        loss.backward()  # doctor: accumulation_unscaled
        if (step + 1) % accum_grad == 0:
            optimizer.step()
            optimizer.zero_grad()
    print(epoch, loss.item())
