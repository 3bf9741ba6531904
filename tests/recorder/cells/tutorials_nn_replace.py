# Source: pytorch/tutorials, beginner_source/nn_tutorial.py (What is torch.nn really?) — rebuilt small in our own words  # noqa: E501
"""Two trainings in one cell, as the tutorial's refactorings pile up in a notebook: a loop over
a ``DataLoader`` written out in the cell trains ``get_model()``'s logistic regression, then
``model`` and ``opt`` are rebound to a new ``nn.Sequential`` with a hidden layer and its own
optimizer, and a second loop trains that one. The first model is dropped mid-cell."""

SETUP: tuple[str, ...] = (
    """\
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

NUM_WORKERS = 0
torch.manual_seed(0)
# made-up digits: sparse 784-pixel rows, labelled by a hidden linear rule
x_train = torch.rand(1000, 784) * (torch.rand(1000, 784) > 0.8)
y_train = (x_train @ torch.randn(784, 10)).argmax(dim=1)
bs, lr, epochs = 64, 0.5, 2
train_dl = DataLoader(
    TensorDataset(x_train, y_train), batch_size=bs, shuffle=True, num_workers=NUM_WORKERS
)
""",
    """\
class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(784, 10)

    def forward(self, xb):
        return self.lin(xb)


def get_model():
    model = Mnist_Logistic()
    return model, optim.SGD(model.parameters(), lr=lr)


loss_func = F.cross_entropy
""",
)

CELL: str = """\
# first the logistic regression, with the loop written out
model, opt = get_model()
for epoch in range(epochs):
    for xb, yb in train_dl:
        pred = model(xb)
        loss = loss_func(pred, yb)

        loss.backward()
        opt.step()
        opt.zero_grad()
    print("logistic", epoch, loss.item())

# then a hidden layer: a new model and a new optimizer under the same two names
model = nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))
opt = optim.SGD(model.parameters(), lr=lr)
for epoch in range(epochs):
    for xb, yb in train_dl:
        pred = model(xb)
        loss = loss_func(pred, yb)

        loss.backward()
        opt.step()
        opt.zero_grad()
    print("hidden layer", epoch, loss.item())
"""
