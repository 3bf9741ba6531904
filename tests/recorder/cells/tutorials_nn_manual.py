# Source: pytorch/tutorials, beginner_source/nn_tutorial.py (What is torch.nn really?) — rebuilt small in our own words  # noqa: E501
"""The tutorial's network from scratch: two bare tensors with ``requires_grad``, a model and a
loss written as plain functions of an earlier cell, and the loop in the cell, which updates
the tensors in place under ``torch.no_grad()`` and zeroes their ``.grad`` by hand."""

SETUP: tuple[str, ...] = (
    """\
import math

import torch

torch.manual_seed(0)
# MNIST's shapes, made up: 1,000 rows of 784 "pixels" (mostly dark, a fifth lit) whose digit
# a hidden linear rule decides
x_train = torch.rand(1000, 784) * (torch.rand(1000, 784) > 0.8)
rule = torch.randn(784, 10)
y_train = (x_train @ rule).argmax(dim=1)
n, c = x_train.shape
print(x_train.shape, y_train.min().item(), y_train.max().item())
""",
    """\
# Xavier-style start: scaled by 1/sqrt(fan-in), *then* marked as needing a gradient
weights = torch.randn(784, 10) / math.sqrt(784)
weights.requires_grad_()
bias = torch.zeros(10, requires_grad=True)


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def model(xb):
    return log_softmax(xb @ weights + bias)


def nll(log_probs, target):
    # minus the mean log-probability of the right digit
    return -log_probs[range(target.shape[0]), target].mean()


def accuracy(out, yb):
    return (torch.argmax(out, dim=1) == yb).float().mean()


loss_func = nll
bs = 64
xb, yb = x_train[:bs], y_train[:bs]
print(loss_func(model(xb), yb), accuracy(model(xb), yb))
""",
)

CELL: str = """\
lr = 0.5
epochs = 2

for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        start = i * bs
        xb = x_train[start : start + bs]
        yb = y_train[start : start + bs]
        pred = model(xb)
        loss = loss_func(pred, yb)

        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
    print(epoch, loss.item(), accuracy(pred, yb).item())
"""
