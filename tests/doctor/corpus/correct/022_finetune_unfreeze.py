# Correct: two-stage fine-tuning, head only then everything, a new optimizer made once per stage
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(121)
X = torch.randn(160, 10)
y = torch.randint(0, 2, (160,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
backbone = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
head = nn.Linear(32, 2)
model = nn.Sequential(backbone, head)
criterion = nn.CrossEntropyLoss()


def run_epochs(optimizer, epochs):
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
    return loss.item()


backbone.requires_grad_(False)
head_optimizer = torch.optim.Adam(head.parameters(), lr=1e-3)
print("head", run_epochs(head_optimizer, 2))
backbone.requires_grad_(True)
full_optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
print("all", run_epochs(full_optimizer, 2))
