# From: Stack Overflow question: 'backward through the graph a second time' after a refactor
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(5)
X = torch.randn(128, 10)
y = torch.randint(0, 2, (128,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
criterion = nn.CrossEntropyLoss()


def training_step(batch):
    xb, yb = batch
    loss = criterion(model(xb), yb)
    loss.backward()
    return loss


for epoch in range(2):
    for batch in loader:
        optimizer.zero_grad()
        loss = training_step(batch)
        loss.backward()  # doctor: backward_twice
        optimizer.step()
    print(epoch, loss.item())
