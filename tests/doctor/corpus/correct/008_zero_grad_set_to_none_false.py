# Correct: optimizer.zero_grad(set_to_none=False) at the top of the loop (the old default)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(107)
X = torch.randn(160, 10)
y = X[:, :3].sum(dim=1, keepdim=True)
loader = DataLoader(TensorDataset(X, y), batch_size=20, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
criterion = nn.MSELoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad(set_to_none=False)
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
