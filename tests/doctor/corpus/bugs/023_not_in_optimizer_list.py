# From: PyTorch forum thread: 'layers in a Python list are not trained' (use nn.ModuleList)
# mypy: ignore-errors
import torch
from torch import nn


class MultiTask(nn.Module):
    def __init__(self, n_tasks: int) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
        self.heads = [nn.Linear(32, 1) for _ in range(n_tasks)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.trunk(x)
        return torch.cat([head(h) for head in self.heads], dim=1)


torch.manual_seed(22)
X = torch.randn(192, 12)
Y = torch.randn(192, 3)
model = MultiTask(3)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # doctor: not_in_optimizer
criterion = nn.MSELoss()

for epoch in range(3):
    for i in range(0, 192, 24):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 24]), Y[i : i + 24])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
