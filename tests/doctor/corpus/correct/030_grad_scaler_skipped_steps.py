# Correct: float16 autocast with a GradScaler whose first steps overflow and are skipped (by design)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(129)
X = torch.randn(128, 16)
y = 50 * X[:, :4].sum(dim=1, keepdim=True)
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu")
criterion = nn.MSELoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = criterion(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(epoch, loss.item(), scaler.get_scale())
