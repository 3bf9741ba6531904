# From: opendataval/opendataval#25 'no need to have sigmoid function if to use cross_entropy'
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class LogisticRegression(nn.Module):
    def __init__(self, input_dim: int, num_classes: int) -> None:
        super().__init__()
        self.linear = nn.Linear(input_dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(x))


torch.manual_seed(166)
X = torch.randn(300, 10)
y = (X @ torch.randn(10, 4)).argmax(dim=1)
model = LogisticRegression(10, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)

for epoch in range(4):
    for xb, yb in zip(X.split(30), y.split(30), strict=True):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)  # doctor: sigmoid_before_cross_entropy
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
