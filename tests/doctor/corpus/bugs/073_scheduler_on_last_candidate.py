# From: Lightning-AI/pytorch-lightning#5519: every scheduler re-made on the last optimizer
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(73)
X = torch.randn(128, 6)
y = torch.randint(0, 3, (128,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
epochs = 3

model = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 3))
candidates = {
    "sgd": torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
    "adamw": torch.optim.AdamW(model.parameters(), lr=3e-3),
}
optimizer = candidates["sgd"]
scheduler = CosineAnnealingLR(list(candidates.values())[-1], T_max=epochs * len(loader))

for epoch in range(epochs):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        scheduler.step()  # doctor: scheduler_other_optimizer
    print(epoch, optimizer.param_groups[0]["lr"], loss.item())
