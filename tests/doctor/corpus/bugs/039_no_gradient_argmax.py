# From: Stack Overflow question: 'element 0 of tensors does not require grad' (loss from argmax)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(38)
X = torch.randn(128, 10)
y = torch.randint(0, 4, (128,))
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        predicted = model(xb).argmax(dim=1)
        loss = (predicted != yb).float().mean()  # the error rate as the loss
        loss.backward()  # doctor: no_gradient
        optimizer.step()
    print(epoch, loss.item())
