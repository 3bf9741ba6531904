# Correct: the prediction keeps its graph, the clip sees the gradients
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(91)
model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(128, 10), torch.randn(128, 1)

for epoch in range(3):
    for i in range(0, 128, 32):
        prediction = model(X[i : i + 32])
        loss = F.mse_loss(prediction, y[i : i + 32])
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    print(epoch, loss.item(), float(norm))
