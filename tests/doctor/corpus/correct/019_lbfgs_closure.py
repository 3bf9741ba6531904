# Correct: LBFGS with a closure: step(closure) runs zero_grad, forward and backward inside step
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(118)
X = torch.randn(128, 4)
y = X @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.3

model = nn.Linear(4, 1)
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
criterion = nn.MSELoss()


def closure() -> torch.Tensor:
    optimizer.zero_grad()
    loss = criterion(model(X), y)
    loss.backward()
    return loss


for epoch in range(6):
    loss = optimizer.step(closure)
    print(epoch, float(loss))
