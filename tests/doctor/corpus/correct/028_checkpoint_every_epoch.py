# Correct: a checkpoint with model and optimizer state saved at the end of every epoch
# mypy: ignore-errors
import io

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(127)
X = torch.randn(128, 8)
y = torch.randint(0, 2, (128,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
checkpoints = []

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    buffer = io.BytesIO()
    state = {"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save(state, buffer)
    checkpoints.append(buffer.getvalue())
    print(epoch, loss.item(), len(checkpoints[-1]))
