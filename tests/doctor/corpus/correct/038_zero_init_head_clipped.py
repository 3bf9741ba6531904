# Correct: facebookresearch/DiT models.py: a zero-initialised last layer, clipped before step
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(137)
X = torch.randn(256, 8)
y = torch.sin(X[:, :1]) + 0.5 * X[:, 1:2]

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
head = model[-1]
nn.init.zeros_(head.weight)  # the first backward gives every earlier layer a gradient of exactly 0
nn.init.zeros_(head.bias)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
criterion = nn.MSELoss()

for epoch in range(3):
    for i in range(0, 256, 32):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 32]), y[i : i + 32])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    print(epoch, loss.item())
