# From: a GitHub issue: 'loss spikes after resuming from checkpoint' (optimizer state not restored)
# mypy: ignore-errors
import io

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(16)
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


# the first run: trains and saves a checkpoint
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
print("first run", train(model, optimizer, 2))
buffer = io.BytesIO()
checkpoint = {"epoch": 2, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
torch.save(checkpoint, buffer)

# the resumed run
buffer.seek(0)
checkpoint = torch.load(buffer)
model = make_model()
model.load_state_dict(checkpoint["model"])  # doctor: resume_without_optimizer
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
print("resumed", train(model, optimizer, 2))
