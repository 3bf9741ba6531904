# Correct: a frozen feature extractor with BatchNorm in eval() (requires_grad=False), a head trained
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(126)
X = torch.randn(192, 12)
y = torch.randint(0, 3, (192,))
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

extractor = nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.ReLU())
extractor.requires_grad_(False)
extractor.eval()
head = nn.Linear(32, 3)
optimizer = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    head.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(head(extractor(xb)), yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
