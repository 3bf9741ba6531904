# From: a GitHub issue: 'Trainer leaks memory' (self.history.append(loss) keeps every graph)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.criterion = nn.CrossEntropyLoss()
        self.history = []

    def train_step(self, xb, yb):
        self.optimizer.zero_grad()
        loss = self.criterion(self.model(xb), yb)
        loss.backward()
        self.optimizer.step()
        self.history.append(loss)  # doctor: log_tensor

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for xb, yb in loader:
                self.train_step(xb, yb)
            print(epoch, self.history[-1].item())


torch.manual_seed(46)
X = torch.randn(192, 8)
y = torch.randint(0, 3, (192,))
loader = DataLoader(TensorDataset(X, y), batch_size=24, shuffle=True)
Trainer(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)), lr=1e-3).fit(loader, 3)
