# From: pytorch/examples word_language_model's total_loss, kept a tensor below correct text
# mypy: ignore-errors
"""Train a small classifier and print the mean loss of each epoch.

Sum the losses as Python floats, ``total_loss += loss.item()``: a tensor sum would keep every
batch's autograd graph alive.
"""

import torch
from torch import nn

torch.manual_seed(153)
X = torch.randn(320, 10)
y = (X[:, 0] + X[:, 1] > 0).long()
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def evaluate(Xv, yv):
    model.eval()
    total_loss = 0.0
    with torch.no_grad():
        for xb, yb in zip(Xv.split(32), yv.split(32), strict=True):
            total_loss += len(xb) * criterion(model(xb), yb).item()
    return total_loss / len(Xv)


for epoch in range(3):
    model.train()
    total_loss = 0
    for i in range(0, 256, 16):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 16]), y[i : i + 16])
        loss.backward()
        optimizer.step()
        total_loss += loss  # doctor: log_tensor
    valid = evaluate(X[256:], y[256:])
    print(f"epoch {epoch}: train {total_loss.item() / 16:.4f}, valid {valid:.4f}")
