# From: PyTorch forum thread: 'zero_grad once per epoch instead of once per batch'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(29)
X = torch.randn(192, 6)
y = torch.randint(0, 3, (192,))
loader = DataLoader(TensorDataset(X, y), batch_size=24, shuffle=True)

model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    optimizer.zero_grad()
    for xb, yb in loader:
        loss = criterion(model(xb), yb)
        loss.backward()  # doctor: skip_zero_grad
        optimizer.step()
    print(epoch, loss.item())
