# Correct: early stopping that keeps the best weights and loads them back once training is over
# mypy: ignore-errors
import copy

import torch
from torch import nn

torch.manual_seed(122)
X = torch.randn(200, 6)
y = X[:, :1] * 2 - X[:, 1:2]
model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.MSELoss()
best_loss, best_state = float("inf"), None

for epoch in range(5):
    for i in range(0, 160, 20):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 20]), y[i : i + 20])
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        val_loss = criterion(model(X[160:]), y[160:]).item()
    if val_loss < best_loss:
        best_loss, best_state = val_loss, copy.deepcopy(model.state_dict())
    print(epoch, val_loss)

model.load_state_dict(best_state)
print("best", best_loss)
