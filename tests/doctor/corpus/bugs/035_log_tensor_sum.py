# From: PyTorch forum thread: 'training slows down every epoch' (epoch_loss = epoch_loss + loss)
# mypy: ignore-errors
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(8, 32)
        self.out = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(x)))


def train(model, X, y, epochs):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        epoch_loss = 0
        for i in range(0, len(X), 16):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(X[i : i + 16]), y[i : i + 16])
            loss.backward()
            optimizer.step()
            epoch_loss = epoch_loss + loss  # doctor: log_tensor
        print(epoch, float(epoch_loss))


torch.manual_seed(34)
X = torch.randn(160, 8)
train(Net(), X, X[:, :1] - X[:, 1:2], epochs=3)
