# From: a GitHub issue: 'RAM grows each epoch' (AverageMeter.update(loss) fed the tensor)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class AverageMeter:
    def __init__(self) -> None:
        self.sum = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.sum += value * n  # doctor: log_tensor
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


torch.manual_seed(43)
X = torch.randn(192, 10)
y = torch.randint(0, 3, (192,))
loader = DataLoader(TensorDataset(X, y), batch_size=24, shuffle=True)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    losses = AverageMeter()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        losses.update(loss, xb.size(0))
    print(f"epoch {epoch}: loss {float(losses.avg):.4f}")
