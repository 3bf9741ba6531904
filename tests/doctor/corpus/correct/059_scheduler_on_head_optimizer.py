# Correct: two optimizers made, the head's one trains and the ExponentialLR is built on it
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import ExponentialLR

torch.manual_seed(72)
X = torch.randn(160, 10)
y = X @ torch.randn(10, 1) + 0.1 * torch.randn(160, 1)

backbone = nn.Sequential(nn.Linear(10, 32), nn.Tanh())
head = nn.Linear(32, 1)
backbone.requires_grad_(False)  # a fixed feature extractor: only the head trains
model = nn.Sequential(backbone, head)

optimizer_ft = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # to fine-tune all
optimizer_conv = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)  # the head only
scheduler = ExponentialLR(optimizer_conv, gamma=0.7)

for epoch in range(4):
    for i in range(0, len(X), 16):
        optimizer_conv.zero_grad()
        loss = F.mse_loss(model(X[i : i + 16]), y[i : i + 16])
        loss.backward()
        optimizer_conv.step()
    scheduler.step()
    print(epoch, optimizer_conv.param_groups[0]["lr"], loss.item())
