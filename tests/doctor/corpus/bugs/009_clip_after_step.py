# From: a GitHub issue: --max-grad-norm silently does nothing (clipping after step)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(8)
X = torch.randn(192, 16)
y = X[:, :2].sum(dim=1, keepdim=True)
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


model = Net()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
criterion = nn.MSELoss()

for epoch in range(4):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)  # doctor: clip_after_step
    print(epoch, loss.item())
