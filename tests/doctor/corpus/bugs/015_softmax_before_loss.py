# From: PyTorch forum thread: 'should I put softmax before nn.CrossEntropyLoss?' (training crawls)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(14)
X = torch.randn(300, 10)
y = torch.randint(0, 5, (300,))
loader = DataLoader(TensorDataset(X, y), batch_size=30, shuffle=True)

model = nn.Sequential(
    nn.Linear(10, 32),
    nn.ReLU(),
    nn.Linear(32, 5),
    nn.Softmax(dim=1),
)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        probs = model(xb)
        loss = criterion(probs, yb)  # doctor: softmax_before_loss
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
