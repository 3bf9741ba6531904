# Correct: the L1 penalty computed from the weight itself, so it has a gradient
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(86)
X = torch.randn(200, 30)
true_w = torch.zeros(30)
true_w[:3] = torch.tensor([2.0, -1.5, 1.0])
y = X @ true_w + 0.1 * torch.randn(200)

layer = nn.Linear(30, 1)
optimizer = torch.optim.SGD(layer.parameters(), lr=0.05)
criterion = nn.MSELoss()
lam = 0.1


def l1loss(layer):
    return torch.norm(layer.weight, p=1)


for _ in range(30):
    optimizer.zero_grad()
    loss = criterion(layer(X).squeeze(1), y) + lam * l1loss(layer)
    loss.backward()
    optimizer.step()
print("zero weights:", int((layer.weight.abs() < 1e-3).sum()))
