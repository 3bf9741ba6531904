# From: a GitHub issue: 'the last accumulated micro-batches of each epoch are dropped'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(21)
X = torch.randn(160, 10)
y = torch.randint(0, 3, (160,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)  # 10 batches

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
accum = 4

for epoch in range(3):
    optimizer.zero_grad()  # doctor: accumulation_reset
    for i, (xb, yb) in enumerate(loader):
        loss = criterion(model(xb), yb) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
    print(epoch, loss.item())
