# Correct: torchvision-style aux head: a sub-module this configuration's forward never uses
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(138)


class Classifier(nn.Module):
    def __init__(self, n_in, n_classes, aux_loss=False):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(n_in, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, n_classes)
        self.aux_head = nn.Linear(32, n_classes)  # trained only when aux_loss is on
        self.aux_loss = aux_loss

    def forward(self, x):
        features = self.backbone(x)
        out = self.head(features)
        if self.aux_loss and self.training:
            return out, self.aux_head(features)
        return out


X = torch.randn(240, 10)
y = (X[:, 0] - X[:, 1] > 0).long()
model = Classifier(10, 2, aux_loss=False)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    model.train()
    for i in range(0, 240, 24):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 24]), y[i : i + 24])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
