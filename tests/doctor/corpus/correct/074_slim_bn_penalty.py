# Correct: the sparsity penalty on the BatchNorm weights themselves
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(87)
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1),
    nn.BatchNorm2d(8),
    nn.ReLU(),
    nn.Conv2d(8, 8, 3, padding=1),
    nn.BatchNorm2d(8),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(8, 4),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
scale = 1e-4


def criterion_patch(criterion):
    def patched_criterion(output, target):
        sum_l1 = 0
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                sum_l1 += torch.norm(module.weight, p=1)
        return criterion(output, target) + scale * sum_l1

    return patched_criterion


patched = criterion_patch(criterion)
images, labels = torch.randn(64, 3, 8, 8), torch.randint(0, 4, (64,))
for epoch in range(2):
    for i in range(0, 64, 16):
        optimizer.zero_grad()
        loss = patched(model(images[i : i + 16]), labels[i : i + 16])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
