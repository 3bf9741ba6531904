# Correct: two different losses through a shared trunk, retain_graph=True on the first, one step
# mypy: ignore-errors
import torch
from torch import nn


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
        self.cls = nn.Linear(32, 3)
        self.reg = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.cls(h), self.reg(h)


torch.manual_seed(102)
X = torch.randn(192, 10)
labels = torch.randint(0, 3, (192,))
targets = X[:, :1] * 2
model = TwoHeads()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(3):
    for i in range(0, 192, 32):
        optimizer.zero_grad()
        logits, value = model(X[i : i + 32])
        loss_cls = nn.functional.cross_entropy(logits, labels[i : i + 32])
        loss_reg = nn.functional.mse_loss(value, targets[i : i + 32])
        loss_cls.backward(retain_graph=True)
        loss_reg.backward()
        optimizer.step()
    print(epoch, loss_cls.item(), loss_reg.item())
