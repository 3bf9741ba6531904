# From: a GitHub issue: '--gradient-accumulation-steps changes nothing' (model.zero_grad())
# mypy: ignore-errors
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def train(model, X, y, accumulation_steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step, i in enumerate(range(0, len(X), 8)):
        model.zero_grad()  # doctor: accumulation_reset
        loss = nn.functional.cross_entropy(model(X[i : i + 8]), y[i : i + 8])
        (loss / accumulation_steps).backward()
        if (step + 1) % accumulation_steps == 0:
            optimizer.step()
    return loss.item()


torch.manual_seed(42)
X = torch.randn(320, 10)
y = torch.randint(0, 2, (320,))
print(train(Net(), X, y, accumulation_steps=4))
