# From: PyTorch forum thread: 'resuming training, only saved model.state_dict()' (Adam restarts)
# mypy: ignore-errors
import os
import tempfile

import torch
from torch import nn

torch.manual_seed(17)
X = torch.randn(200, 6)
y = torch.randint(0, 3, (200,))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def fit(model, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for i in range(0, 200, 40):
            optimizer.zero_grad()
            loss = criterion(model(X[i : i + 40]), y[i : i + 40])
            loss.backward()
            optimizer.step()
    return loss.item()


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "last.pt")
    model = Net()
    print(fit(model, 2))
    torch.save(model.state_dict(), path)
    # "the job was preempted": start again from the saved weights
    model = Net()
    model.load_state_dict(torch.load(path))  # doctor: resume_without_optimizer
    print(fit(model, 2))
