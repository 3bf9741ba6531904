# Correct: a frozen backbone (requires_grad=False) that no optimizer holds, only the head trained
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(103)
X = torch.randn(160, 12)
y = torch.randint(0, 2, (160,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

backbone = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
for p in backbone.parameters():
    p.requires_grad = False
head = nn.Linear(16, 2)
model = nn.Sequential(backbone, head)
optimizer = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
