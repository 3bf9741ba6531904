# From: a GitHub issue: 'fp16 training: GradScaler created but never used, grads underflow'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(41)
X = torch.randn(128, 16)
y = X[:, :4].sum(dim=1, keepdim=True)
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu")
criterion = nn.MSELoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = criterion(model(xb), yb)
        loss.backward()  # doctor: float16_without_scaler
        optimizer.step()
    print(epoch, loss.item())
