# Source: pytorch/tutorials, beginner_source/nn_tutorial.py (What is torch.nn really?) — rebuilt small in our own words  # noqa: E501
"""The tutorial's ``nn.Module`` step: weights as ``nn.Parameter`` of a ``Mnist_Logistic``, and a
``fit()`` of no arguments, defined in an earlier cell, whose loop reads the globals (the model
the cell just made, ``lr``, ``bs``) and steps by hand: ``p -= p.grad * lr`` over
``model.parameters()`` and ``model.zero_grad()``, under ``torch.no_grad()``."""

SETUP: tuple[str, ...] = (
    """\
import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
# made-up digits: sparse 784-pixel rows, labelled by a hidden linear rule
x_train = torch.rand(1000, 784) * (torch.rand(1000, 784) > 0.8)
y_train = (x_train @ torch.randn(784, 10)).argmax(dim=1)
n, c = x_train.shape
bs, lr, epochs = 64, 0.5, 2
loss_func = F.cross_entropy
""",
    """\
class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(784, 10) / math.sqrt(784))
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, xb):
        return xb @ self.weights + self.bias


def fit():
    # everything from the globals: the model, the data, the step size
    for epoch in range(epochs):
        for i in range((n - 1) // bs + 1):
            xb = x_train[i * bs : i * bs + bs]
            yb = y_train[i * bs : i * bs + bs]
            loss = loss_func(model(xb), yb)

            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= p.grad * lr
                model.zero_grad()
        print(epoch, loss.item())
""",
)

CELL: str = """\
model = Mnist_Logistic()
print(loss_func(model(x_train[:bs]), y_train[:bs]))
fit()
print(loss_func(model(x_train[:bs]), y_train[:bs]))
"""
