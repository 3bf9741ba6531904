# From: pytorch/examples word_language_model's train() summing tensors under a correct docstring
# mypy: ignore-errors
import torch
from torch import nn


def fit(model, X, y, epochs):
    """Train ``model``; report the loss before training and each epoch's mean.

    The baseline pass sums floats (``total_loss += loss.item()``), which keeps no graph.
    """
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    total_loss = 0.0
    with torch.no_grad():
        for i in range(0, len(X), 32):
            total_loss += criterion(model(X[i : i + 32]), y[i : i + 32]).item()
    print("before training", total_loss / (len(X) // 32))
    for epoch in range(epochs):
        total_loss = 0
        for i in range(0, len(X), 32):
            optimizer.zero_grad()
            loss = criterion(model(X[i : i + 32]), y[i : i + 32])
            loss.backward()
            optimizer.step()
            total_loss += loss  # doctor: log_tensor
        print(f"epoch {epoch}: {total_loss.item() / (len(X) // 32):.4f}")


torch.manual_seed(158)
X = torch.randn(256, 6)
y = X @ torch.randn(6, 1)
fit(nn.Sequential(nn.Linear(6, 24), nn.Tanh(), nn.Linear(24, 1)), X, y, 3)
