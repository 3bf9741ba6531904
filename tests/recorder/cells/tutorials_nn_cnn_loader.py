# Source: pytorch/tutorials, beginner_source/nn_tutorial.py (What is torch.nn really?) — rebuilt small in our own words  # noqa: E501
"""The tutorial's CNN as an ``nn.Sequential``: a ``Lambda`` module (a function of an earlier
cell, as a layer) reshapes rows into images, three strided ``Conv2d`` with ``ReLU``,
``AdaptiveAvgPool2d`` and a ``Lambda`` around a lambda to flatten. Batches come through a
``WrappedDataLoader`` (a generator that maps each batch) around ``DataLoader``s, and SGD with
momentum trains it in ``fit``, an earlier cell's loop."""

SETUP: tuple[str, ...] = (
    """\
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

NUM_WORKERS = 0
torch.manual_seed(0)
rule = torch.randn(784, 10)  # which made-up digit a row of pixels is


def made_up_digits(count):
    pixels = torch.rand(count, 784) * (torch.rand(count, 784) > 0.8)
    return pixels, (pixels @ rule).argmax(dim=1)


train_ds = TensorDataset(*made_up_digits(640))
valid_ds = TensorDataset(*made_up_digits(128))
bs, lr, epochs = 64, 0.1, 2
loss_func = F.cross_entropy
""",
    """\
class Lambda(nn.Module):
    # any function as a layer
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def as_images(x):
    return x.view(-1, 1, 28, 28)


dev = torch.device("cpu")


def to_device(x, y):
    return x.to(dev), y.to(dev)


class WrappedDataLoader:
    # hands out the batches of `dl`, each passed through `func` first
    def __init__(self, dl, func):
        self.dl = dl
        self.func = func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for batch in self.dl:
            yield self.func(*batch)


def get_data(train_ds, valid_ds, bs):
    return (
        DataLoader(train_ds, batch_size=bs, shuffle=True, num_workers=NUM_WORKERS),
        DataLoader(valid_ds, batch_size=bs * 2, num_workers=NUM_WORKERS),
    )


train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, to_device)
valid_dl = WrappedDataLoader(valid_dl, to_device)
""",
    """\
def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
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
            losses, sizes = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        print(epoch, np.sum(np.multiply(losses, sizes)) / np.sum(sizes))
""",
)

CELL: str = """\
model = nn.Sequential(
    Lambda(as_images),
    nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    Lambda(lambda x: x.view(x.size(0), -1)),
)
opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)

fit(epochs, model, loss_func, opt, train_dl, valid_dl)
"""
