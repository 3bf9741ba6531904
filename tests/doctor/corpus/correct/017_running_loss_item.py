# Correct: running_loss += loss.item(), a Python float, and a list of floats for the plot
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(116)
X = torch.randn(256, 12)
y = torch.randint(0, 3, (256,))
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
history = []

for epoch in range(3):
    running_loss = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        history.append(loss.item())
    print(f"epoch {epoch}: {running_loss / len(loader):.4f}")
