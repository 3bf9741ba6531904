# From: issue 46's trainer: infer() shared by training and validation, validation without no_grad
# mypy: ignore-errors
import torch
from torch import nn


class Trainer:
    def __init__(self, module, lr=1e-3):
        self.module = module
        self.optimizer = torch.optim.Adam(module.parameters(), lr=lr)
        self.criterion = nn.CrossEntropyLoss()

    def infer(self, x):
        return self.module(x)

    def train_step(self, x, y):
        self.module.train()
        self.optimizer.zero_grad()
        loss = self.criterion(self.infer(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def validate(self, X, y):
        self.module.eval()
        correct = 0
        for i in range(0, len(X), 20):
            logits = self.infer(X[i : i + 20])  # doctor: validation_with_grad
            correct += (logits.argmax(dim=1) == y[i : i + 20]).sum().item()
        return correct / len(X)


torch.manual_seed(154)
X = torch.randn(240, 12)
y = X[:, :3].argmax(dim=1)
net = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Dropout(0.2), nn.Linear(48, 3))
trainer = Trainer(net)
for epoch in range(4):
    for i in range(0, 160, 16):
        loss = trainer.train_step(X[i : i + 16], y[i : i + 16])
    print(epoch, loss, trainer.validate(X[160:], y[160:]))
