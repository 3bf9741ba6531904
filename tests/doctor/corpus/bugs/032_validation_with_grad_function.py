# From: PyTorch forum thread: 'memory grows during validate()' (model.eval() is not torch.no_grad())
# mypy: ignore-errors
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(12, 48), nn.ReLU(), nn.Dropout(0.25), nn.Linear(48, 4)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def validate(model, X, y):
    model.eval()
    correct = 0
    for i in range(0, len(X), 20):
        logits = model(X[i : i + 20])  # doctor: validation_with_grad
        correct += (logits.argmax(dim=1) == y[i : i + 20]).sum().item()
    model.train()
    return correct / len(X)


torch.manual_seed(31)
X = torch.randn(200, 12)
y = torch.randint(0, 4, (200,))
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    for i in range(0, 160, 16):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 16]), y[i : i + 16])
        loss.backward()
        optimizer.step()
    print(epoch, validate(model, X[160:], y[160:]))
