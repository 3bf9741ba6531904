# Source: pytorch/tutorials, beginner_source/nn_tutorial.py (What is torch.nn really?) — rebuilt small in our own words  # noqa: E501
"""The tutorial's three-line training: ``get_data``, ``get_model`` and ``fit``. The loop lives in
``fit``, an earlier cell's function, which calls ``loss_batch`` per batch (backward and step
only when handed an optimizer) and validates under ``model.eval()`` and ``torch.no_grad()``.
An earlier cell already made a global ``model``; ``get_model`` builds a *local* ``model`` and
returns it, and the cell rebinds the global name to it."""

SETUP: tuple[str, ...] = (
    """\
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

NUM_WORKERS = 0
torch.manual_seed(0)
rule = torch.randn(784, 10)  # the hidden rule the made-up digits follow


def made_up_digits(count):
    pixels = torch.rand(count, 784) * (torch.rand(count, 784) > 0.8)
    return pixels, (pixels @ rule).argmax(dim=1)


x_train, y_train = made_up_digits(1000)
x_valid, y_valid = made_up_digits(200)
train_ds = TensorDataset(x_train, y_train)
valid_ds = TensorDataset(x_valid, y_valid)
""",
    """\
class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(784, 10)

    def forward(self, xb):
        return self.lin(xb)


lr, epochs, bs = 0.5, 2, 64
loss_func = F.cross_entropy
model = Mnist_Logistic()
print("untrained:", loss_func(model(x_train[:bs]), y_train[:bs]).item())
""",
    """\
def get_model():
    model = Mnist_Logistic()
    return model, optim.SGD(model.parameters(), lr=lr)


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:  # a training batch: learn from it
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)

        model.eval()
        with torch.no_grad():
            results = [loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl]
        batch_losses, batch_sizes = zip(*results)
        print(epoch, np.sum(np.multiply(batch_losses, batch_sizes)) / np.sum(batch_sizes))


def get_data(train_ds, valid_ds, bs):
    # validation needs no gradients, so its batches can be twice as big
    return (
        DataLoader(train_ds, batch_size=bs, shuffle=True, num_workers=NUM_WORKERS),
        DataLoader(valid_ds, batch_size=bs * 2, num_workers=NUM_WORKERS),
    )


train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
""",
)

CELL: str = """\
model, opt = get_model()
fit(epochs, model, loss_func, opt, train_dl, valid_dl)
"""
