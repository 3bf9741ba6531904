# Correct: clip_grad_norm_ between backward and step, ReduceLROnPlateau per epoch on val loss
# mypy: ignore-errors
import torch
from torch import nn
from torch.optim.lr_scheduler import ReduceLROnPlateau
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(120)
X = torch.randn(240, 8)
y = X @ torch.randn(8, 1)
train_loader = DataLoader(TensorDataset(X[:192], y[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(X[192:], y[192:]), batch_size=48)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
scheduler = ReduceLROnPlateau(optimizer, factor=0.5, patience=1)
criterion = nn.MSELoss()

for epoch in range(4):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = sum(criterion(model(xb), yb).item() for xb, yb in val_loader)
    scheduler.step(val_loss)
    print(epoch, val_loss, optimizer.param_groups[0]["lr"])
