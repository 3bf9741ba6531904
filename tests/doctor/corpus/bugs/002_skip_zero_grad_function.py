# From: Stack Overflow question: 'training loss explodes in my train_one_epoch function'
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self, n_in: int, n_classes: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, 32), nn.ReLU())
        self.head = nn.Linear(32, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def train_one_epoch(model, loader, optimizer, criterion):
    model.train()
    running = 0.0
    for xb, yb in loader:
        logits = model(xb)
        loss = criterion(logits, yb)
        loss.backward()  # doctor: skip_zero_grad
        optimizer.step()
        running += loss.item()
    return running / len(loader)


def main() -> None:
    torch.manual_seed(1)
    X = torch.randn(240, 8)
    y = (X[:, 0] + X[:, 1] > 0).long()
    loader = DataLoader(TensorDataset(X, y), batch_size=24, shuffle=True)
    model = Classifier(8, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    optimizer.zero_grad()  # once, before training: not per iteration
    for epoch in range(4):
        print(epoch, train_one_epoch(model, loader, optimizer, criterion))


if __name__ == "__main__":
    main()
