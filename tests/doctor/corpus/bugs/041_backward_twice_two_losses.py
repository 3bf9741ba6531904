# From: PyTorch forum thread: 'two losses, second backward fails' (shared graph freed by the first)
# mypy: ignore-errors
import torch
from torch import nn


class Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(10, 32), nn.Tanh())
        self.a = nn.Linear(32, 1)
        self.b = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.a(h), self.b(h)


torch.manual_seed(40)
X = torch.randn(128, 10)
ya, yb = X[:, :1], X[:, 1:2]
model = Shared()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    for i in range(0, 128, 16):
        optimizer.zero_grad()
        out_a, out_b = model(X[i : i + 16])
        loss_a = nn.functional.mse_loss(out_a, ya[i : i + 16])
        loss_b = nn.functional.mse_loss(out_b, yb[i : i + 16])
        loss_a.backward()
        loss_b.backward()  # doctor: backward_twice
        optimizer.step()
    print(epoch, loss_a.item(), loss_b.item())
