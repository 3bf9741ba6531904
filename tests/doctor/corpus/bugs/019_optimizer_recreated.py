# From: PyTorch forum thread: 'Adam in the epoch loop: should the optimizer be created once?'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(18)
X = torch.randn(128, 10)
y = torch.randint(0, 2, (128,))
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # doctor: optimizer_recreated
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
