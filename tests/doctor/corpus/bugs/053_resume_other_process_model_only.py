# From: pytorch/tutorials general checkpoint recipe: another process's checkpoint, model only
# mypy: ignore-errors
import os
import subprocess
import sys
import tempfile

import torch
from torch import nn

FIRST_JOB = """
import sys
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
X = torch.randn(64, 6)
y = X.sum(dim=1, keepdim=True)
for epoch in range(5):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(X), y)
    loss.backward()
    optimizer.step()
torch.save(
    {"epoch": epoch, "model_state_dict": model.state_dict(),
     "optimizer_state_dict": optimizer.state_dict(), "loss": loss.item()},
    sys.argv[1],
)
"""

torch.manual_seed(152)
X = torch.randn(64, 6)
y = X.sum(dim=1, keepdim=True)

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "checkpoint.tar")
    subprocess.run([sys.executable, "-c", FIRST_JOB, path], check=True)

    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model_state_dict"])  # doctor: resume_without_optimizer
    start = checkpoint["epoch"] + 1
    model.train()
    for epoch in range(start, start + 10):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(X), y)
        loss.backward()
        optimizer.step()
        print("epoch", epoch, loss.item())
