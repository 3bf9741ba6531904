# Correct: d2l-ai/d2l-en d2l/torch.py: class Trainer fit()/fit_epoch(), scratch w, b and SGD class
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(143)


class SyntheticRegressionData:
    def __init__(self, w, b, noise=0.01, num_train=400, num_val=100, batch_size=32):
        self.batch_size, self.num_train = batch_size, num_train
        n = num_train + num_val
        self.X = torch.randn(n, len(w))
        self.y = self.X @ w.reshape(-1, 1) + b + noise * torch.randn(n, 1)

    def loader(self, train):
        part = slice(0, self.num_train) if train else slice(self.num_train, None)
        dataset = torch.utils.data.TensorDataset(self.X[part], self.y[part])
        return torch.utils.data.DataLoader(dataset, self.batch_size, shuffle=train)

    def train_dataloader(self):
        return self.loader(train=True)

    def val_dataloader(self):
        return self.loader(train=False)


class SGD:
    """Minibatch SGD over a list of tensors, written out."""

    def __init__(self, params, lr):
        self.params, self.lr = params, lr

    def step(self):
        for param in self.params:
            param -= self.lr * param.grad

    def zero_grad(self):
        for param in self.params:
            if param.grad is not None:
                param.grad.zero_()


class LinearRegressionScratch(nn.Module):
    def __init__(self, num_inputs, lr, sigma=0.01):
        super().__init__()
        self.lr = lr
        self.w = torch.normal(0, sigma, (num_inputs, 1), requires_grad=True)
        self.b = torch.zeros(1, requires_grad=True)
        self.history = {"train": [], "val": []}

    def forward(self, X):
        return X @ self.w + self.b

    def loss(self, y_hat, y):
        return ((y_hat - y) ** 2 / 2).mean()

    def training_step(self, batch):
        loss = self.loss(self(*batch[:-1]), batch[-1])
        self.history["train"].append(loss.item())
        return loss

    def validation_step(self, batch):
        loss = self.loss(self(*batch[:-1]), batch[-1])
        self.history["val"].append(loss.item())

    def configure_optimizers(self):
        return SGD([self.w, self.b], self.lr)


class Trainer:
    def __init__(self, max_epochs, gradient_clip_val=0):
        self.max_epochs, self.gradient_clip_val = max_epochs, gradient_clip_val

    def prepare_batch(self, batch):
        return batch

    def fit(self, model, data):
        self.train_dataloader = data.train_dataloader()
        self.val_dataloader = data.val_dataloader()
        self.model = model
        self.optim = model.configure_optimizers()
        self.train_batch_idx = self.val_batch_idx = 0
        for self.epoch in range(self.max_epochs):  # noqa: B020 (as d2l writes it)
            self.fit_epoch()

    def fit_epoch(self):
        self.model.train()
        for batch in self.train_dataloader:
            loss = self.model.training_step(self.prepare_batch(batch))
            self.optim.zero_grad()
            with torch.no_grad():
                loss.backward()
                self.optim.step()
            self.train_batch_idx += 1
        self.model.eval()
        for batch in self.val_dataloader:
            with torch.no_grad():
                self.model.validation_step(self.prepare_batch(batch))
            self.val_batch_idx += 1
        print(f"epoch {self.epoch}: val loss {self.model.history['val'][-1]:.5f}")


model = LinearRegressionScratch(2, lr=0.03)
data = SyntheticRegressionData(w=torch.tensor([2.0, -3.4]), b=4.2)
trainer = Trainer(max_epochs=3)
trainer.fit(model, data)
print("w", model.w.reshape(-1).tolist(), "b", model.b.item())
