# Correct: DeepHyperX#51's fix: model.eval() in a @torch.no_grad() evaluate(), model.train() after
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2)
        )
        self.drop = nn.Dropout(0.4)
        self.head = nn.Linear(8 * 4 * 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.features(x).flatten(1)))


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total, correct, loss_sum = 0, 0, 0.0
    for xv, yv in loader:
        logits = model(xv)
        loss_sum += nn.functional.cross_entropy(logits, yv, reduction="sum").item()
        correct += (logits.argmax(dim=1) == yv).sum().item()
        total += yv.numel()
    return loss_sum / total, correct / total


torch.manual_seed(81)
images = torch.randn(160, 1, 8, 8)
labels = (images[:, 0, :4].mean(dim=(1, 2)) > 0).long() + (images[:, 0, 4:].mean(dim=(1, 2)) > 0.3)
train_loader = DataLoader(TensorDataset(images[:128], labels[:128]), batch_size=16, shuffle=True)
val_loader = DataLoader(TensorDataset(images[128:], labels[128:]), batch_size=16)

model = SmallCNN()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(3):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    first, second = evaluate(model, val_loader), evaluate(model, val_loader)
    print(epoch, "two passes over the same validation set:", first, second)
