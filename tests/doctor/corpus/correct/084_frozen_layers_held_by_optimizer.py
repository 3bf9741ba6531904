# Correct: a fine-tune that freezes the backbone and gives the optimizer every parameter anyway
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(84)
backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
head = nn.Linear(32, 3)
model = nn.Sequential(backbone, head)
for p in backbone.parameters():
    p.requires_grad = False  # frozen on purpose: the optimizer skips what gets no gradient
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

X, y = torch.randn(96, 16), torch.randint(0, 3, (96,))
for epoch in range(3):
    for i in range(0, 96, 32):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
