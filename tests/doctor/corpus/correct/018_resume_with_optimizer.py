# Correct: a resume that restores the model and the Adam optimizer's state from the checkpoint
# mypy: ignore-errors
import io

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(117)
X = torch.randn(160, 8)
y = X @ torch.randn(8, 1)
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
criterion = nn.MSELoss()


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))


def train(model, optimizer, epochs):
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
    return loss.item()


model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
print("first run", train(model, optimizer, 2))
buffer = io.BytesIO()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)

buffer.seek(0)
checkpoint = torch.load(buffer)
model = make_model()
model.load_state_dict(checkpoint["model"])
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
optimizer.load_state_dict(checkpoint["optimizer"])
print("resumed", train(model, optimizer, 2))
