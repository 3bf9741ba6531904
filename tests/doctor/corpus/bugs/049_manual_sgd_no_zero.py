# From: pytorch/examples regression/main.py without its zero_grad(): the hand update reads a sum
# mypy: ignore-errors
import torch
import torch.nn.functional as F

torch.manual_seed(148)
DEGREE = 3
true_w = torch.randn(DEGREE, 1)
true_b = torch.randn(1)


def powers(x):
    return torch.stack([x**k for k in range(1, DEGREE + 1)], dim=1)


def sample(n=32):
    x = powers(torch.randn(n))
    return x, x @ true_w + true_b


fc = torch.nn.Linear(DEGREE, 1)
lr = 0.01
for step in range(1, 61):
    xb, yb = sample()
    loss = F.smooth_l1_loss(fc(xb), yb)
    loss.backward()  # doctor: skip_zero_grad
    for p in fc.parameters():
        p.data.add_(-lr * p.grad)
    if step % 20 == 0:
        print(step, loss.item())
