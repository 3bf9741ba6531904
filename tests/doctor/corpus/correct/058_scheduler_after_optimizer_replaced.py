# Correct: an optimizer replaced by Adam under the same name, the StepLR built after, on the Adam
# mypy: ignore-errors
import torch
from torch import nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(71)
X = torch.randn(160, 8)
y = (X[:, 0] + X[:, 1] > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # switched to Adam, same name
scheduler = StepLR(optimizer, step_size=1, gamma=0.5)

for epoch in range(4):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    scheduler.step()
    print(epoch, optimizer.param_groups[0]["lr"], loss.item())
