# From: a GitHub issue: 'weights never change' (zero_grad moved between backward and step)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(3)
X = torch.randn(192, 12)
y = torch.randint(0, 3, (192,))
loader = DataLoader(TensorDataset(X, y), batch_size=16)

model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.zero_grad()  # doctor: zero_grad_before_step
        optimizer.step()
    print(epoch, loss.item())
