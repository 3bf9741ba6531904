# From: a GitHub issue: 'fp16 autocast training, grads underflow to zero' (no GradScaler)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(19)
X = torch.randn(128, 16)
y = torch.randint(0, 4, (128,))
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            logits = model(xb)
            loss = criterion(logits, yb)
        loss.backward()  # doctor: float16_without_scaler
        optimizer.step()
    print(epoch, loss.item())
