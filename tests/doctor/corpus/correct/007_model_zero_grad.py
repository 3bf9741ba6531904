# Correct: model.zero_grad() at the top of each iteration instead of optimizer.zero_grad()
# mypy: ignore-errors
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 24)
        self.fc2 = nn.Linear(24, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


torch.manual_seed(106)
X = torch.randn(192, 8)
y = (X[:, 0] * X[:, 1] > 0).long()
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for i in range(0, 192, 24):
        model.zero_grad()
        loss = criterion(model(X[i : i + 24]), y[i : i + 24])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
