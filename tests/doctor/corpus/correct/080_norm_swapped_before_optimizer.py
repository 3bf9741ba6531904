# Correct: the optimizer made after the norm layer is swapped
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(93)
model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1),
    nn.BatchNorm2d(8),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(8, 2),
)
model[1] = nn.GroupNorm(4, 8)  # what a privacy validator's fix does to BatchNorm
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

images, labels = torch.randn(64, 1, 6, 6), torch.randint(0, 2, (64,))
for epoch in range(2):
    for i in range(0, 64, 16):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images[i : i + 16]), labels[i : i + 16])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
