# Correct: F.dropout(x, 0.5, training=self.training) in forward, off after model.eval()
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 64)
        self.fc2 = nn.Linear(64, 2)

    def forward(self, x):
        x = F.dropout(F.relu(self.fc1(x)), 0.5, training=self.training)
        return self.fc2(x)


torch.manual_seed(77)
X = torch.randn(256, 10)
y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).long()
train_loader = DataLoader(TensorDataset(X[:192], y[:192]), batch_size=16, shuffle=True)

model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())

model.eval()
with torch.no_grad():
    for _ in range(2):  # the same held-out data twice
        accuracy = (model(X[192:]).argmax(dim=1) == y[192:]).float().mean().item()
        print("accuracy", accuracy)
