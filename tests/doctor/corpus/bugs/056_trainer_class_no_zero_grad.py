# From: d2l-ai/d2l-en d2l/torch.py Trainer.fit_epoch with self.optim.zero_grad() left out
# mypy: ignore-errors
import torch
from torch import nn


class Data:
    def __init__(self, n=240, batch_size=24):
        self.X = torch.randn(n, 6)
        self.y = self.X @ torch.randn(6, 1) + 0.1 * torch.randn(n, 1)
        self.batch_size = batch_size

    def train_dataloader(self):
        dataset = torch.utils.data.TensorDataset(self.X[:192], self.y[:192])
        return torch.utils.data.DataLoader(dataset, self.batch_size, shuffle=True)

    def val_dataloader(self):
        dataset = torch.utils.data.TensorDataset(self.X[192:], self.y[192:])
        return torch.utils.data.DataLoader(dataset, self.batch_size)


class Regressor(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
        self.lr = lr
        self.val_losses = []

    def forward(self, X):
        return self.net(X)

    def training_step(self, batch):
        return nn.functional.mse_loss(self(batch[0]), batch[1])

    def validation_step(self, batch):
        self.val_losses.append(nn.functional.mse_loss(self(batch[0]), batch[1]).item())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


class Trainer:
    def __init__(self, max_epochs):
        self.max_epochs = max_epochs

    def fit(self, model, data):
        self.train_dataloader = data.train_dataloader()
        self.val_dataloader = data.val_dataloader()
        self.model = model
        self.optim = model.configure_optimizers()
        for self.epoch in range(self.max_epochs):  # noqa: B020 (as d2l writes it)
            self.fit_epoch()
            print(f"epoch {self.epoch}: val {model.val_losses[-1]:.4f}")

    def fit_epoch(self):
        self.model.train()
        for batch in self.train_dataloader:
            loss = self.model.training_step(batch)
            with torch.no_grad():
                loss.backward()  # doctor: skip_zero_grad
                self.optim.step()
        self.model.eval()
        for batch in self.val_dataloader:
            with torch.no_grad():
                self.model.validation_step(batch)


torch.manual_seed(155)
Trainer(max_epochs=3).fit(Regressor(lr=0.01), Data())
