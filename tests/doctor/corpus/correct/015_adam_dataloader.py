# Correct: a plain loop, Adam and a DataLoader, zero_grad, forward, backward, step
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Blobs(Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(114)
        self.y = torch.randint(0, 3, (n,), generator=g)
        centers = torch.tensor([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
        self.x = centers[self.y] + 0.5 * torch.randn(n, 2, generator=g)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i], self.y[i]


torch.manual_seed(114)
loader = DataLoader(Blobs(240), batch_size=24, shuffle=True)
model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
