# Correct: pytorch/tutorials general checkpoint recipe: another process's checkpoint, both loaded
# mypy: ignore-errors
import os
import subprocess
import sys
import tempfile

import torch
from torch import nn

# the first job: trains a few epochs and writes the checkpoint, then is "preempted"
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

torch.manual_seed(142)
X = torch.randn(64, 6)
y = X.sum(dim=1, keepdim=True)

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "checkpoint.tar")
    subprocess.run([sys.executable, "-c", FIRST_JOB, path], check=True)

    # the second job: resumes where the first stopped
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    start = checkpoint["epoch"] + 1
    print("resuming at epoch", start, "from loss", checkpoint["loss"])
    model.train()
    for epoch in range(start, start + 10):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(X), y)
        loss.backward()
        optimizer.step()
        print("epoch", epoch, loss.item())
