# Correct: gradient accumulation, k backwards scaled by 1/k, one step, a last partial group stepped
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(100)
X = torch.randn(176, 8)
y = X @ torch.randn(8, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)  # 11 batches

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()
accum = 4

optimizer.zero_grad()
for epoch in range(3):
    for i, (xb, yb) in enumerate(loader):
        loss = criterion(model(xb), yb) / accum
        loss.backward()
        if (i + 1) % accum == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
    print(epoch, loss.item() * accum)
