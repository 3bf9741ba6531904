# From: Stack Overflow question: 'is it fine to call optimizer.step() at the top of the loop?'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(36)
X = torch.randn(160, 8)
y = X @ torch.randn(8, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.step()  # doctor: step_first
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
    print(epoch, loss.item())
