# From: PyTorch forum thread: 'model.zero_grad() after backward, loss does not decrease'
# mypy: ignore-errors
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 24)
        self.fc2 = nn.Linear(24, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(39)
X = torch.randn(160, 6)
y = (X[:, 0] > X[:, 1]).long()
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for i in range(0, 160, 20):
        loss = criterion(model(X[i : i + 20]), y[i : i + 20])
        loss.backward()
        model.zero_grad()  # doctor: zero_grad_before_step
        optimizer.step()
    print(epoch, loss.item())
