# Correct: pytorch/tutorials transfer_learning_tutorial.py: pretrained weights, new head and optim
# mypy: ignore-errors
import os
import tempfile

import torch
from torch import nn

torch.manual_seed(141)


class Net(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.fc = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.fc(self.features(x))


def train(model, optimizer, X, y, epochs):
    criterion = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        for i in range(0, len(X), 20):
            optimizer.zero_grad()
            loss = criterion(model(X[i : i + 20]), y[i : i + 20])
            loss.backward()
            optimizer.step()
    return loss.item()


X_a = torch.randn(200, 12)
y_a = (X_a[:, :4].argmax(dim=1)).long()  # the pretraining task: 4 classes
X_b = torch.randn(100, 12)
y_b = (X_b[:, 0] * X_b[:, 1] > 0).long()  # the downstream task: 2 classes

with tempfile.TemporaryDirectory() as tmp:
    weights = os.path.join(tmp, "pretrained.pt")
    # "upstream": someone trains on the large task and publishes the weights only
    pretrained = Net(n_classes=4)
    adam = torch.optim.Adam(pretrained.parameters(), lr=1e-3)
    print("pretraining", train(pretrained, adam, X_a, y_a, 2))
    torch.save(pretrained.state_dict(), weights)

    # fine-tuning: load the weights, replace the classifier, a fresh optimizer for the new task
    model = Net(n_classes=4)
    model.load_state_dict(torch.load(weights))
    model.fc = nn.Linear(32, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    print("fine-tuning", train(model, optimizer, X_b, y_b, 3))
