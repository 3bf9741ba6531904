# Correct: pytorch/examples regression/main.py: hand SGD p.data.add_(-lr * p.grad), then zero_grad()
# mypy: ignore-errors
import torch
import torch.nn.functional as F

torch.manual_seed(130)
DEGREE = 3
true_w = torch.randn(DEGREE, 1)
true_b = torch.randn(1)


def powers(x):
    """The columns x, x**2, x**3 of a batch of scalars."""
    return torch.stack([x**k for k in range(1, DEGREE + 1)], dim=1)


def sample(n=32):
    x = powers(torch.randn(n))
    return x, x @ true_w + true_b


fc = torch.nn.Linear(DEGREE, 1)
lr = 0.05
for step in range(1, 151):
    xb, yb = sample()
    loss = F.smooth_l1_loss(fc(xb), yb)
    loss.backward()
    for p in fc.parameters():
        p.data.add_(-lr * p.grad)
    fc.zero_grad()
    if loss.item() < 1e-3 or step % 50 == 0:
        print(f"loss {loss.item():.5f} after {step} batches")
    if loss.item() < 1e-3:
        break
print("learned", fc.weight.view(-1).tolist(), fc.bias.item())
