# From: PyTorch forum thread: 'SGD does nothing, gradients are all zero at step()'
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(4)
X = torch.randn(160, 5)
y = 3 * X[:, :1] - X[:, 1:2]


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(5, 20)
        self.fc2 = nn.Linear(20, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


model = Regressor()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.MSELoss()

for epoch in range(4):
    perm = torch.randperm(len(X))
    for start in range(0, len(X), 32):
        idx = perm[start : start + 32]
        loss = loss_fn(model(X[idx]), y[idx])
        loss.backward()
        optimizer.zero_grad(set_to_none=False)  # doctor: zeros
        optimizer.step()
    print(epoch, loss.item())
