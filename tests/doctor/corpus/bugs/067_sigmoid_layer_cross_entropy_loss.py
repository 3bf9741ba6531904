# From: runebook.dev 'A Guide to Sigmoid, Softmax, and BCEWithLogitsLoss': nn.Sigmoid, then CE
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(167)
centers = 2.0 * torch.randn(5, 8)
labels = torch.randint(0, 5, (400,))
points = centers[labels] + torch.randn(400, 8)
loader = DataLoader(TensorDataset(points, labels), batch_size=40, shuffle=True)
model = nn.Sequential(
    nn.Linear(8, 32),
    nn.Tanh(),
    nn.Linear(32, 5),
    nn.Sigmoid(),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)  # doctor: sigmoid_before_cross_entropy
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
