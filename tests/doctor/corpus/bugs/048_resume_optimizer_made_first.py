# From: PyTorch forum thread: 'loss jumps after loading a checkpoint' (optimizer state not loaded)
# mypy: ignore-errors
import os
import tempfile

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def train(model, optimizer, X, y, epochs):
    for _ in range(epochs):
        for i in range(0, len(X), 32):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(X[i : i + 32]), y[i : i + 32])
            loss.backward()
            optimizer.step()
    return loss.item()


torch.manual_seed(47)
X = torch.randn(160, 8)
y = X @ torch.randn(8, 1)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "checkpoint.tar")
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    print(train(model, optimizer, X, y, 2))
    state = {"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict()}
    torch.save(state, path)

    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model_state_dict"])  # doctor: resume_without_optimizer
    print(train(model, optimizer, X, y, 2))
