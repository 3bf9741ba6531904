# Correct: d2l-ai/d2l-en Trainer.clip_gradients (grad[:] *= in place), weight-decay param group
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(144)


class Data:
    def __init__(self, num_train=160, num_val=80, num_inputs=40, batch_size=16):
        n = num_train + num_val
        self.X = torch.randn(n, num_inputs)
        self.y = 0.01 * self.X.sum(dim=1, keepdim=True) + 0.05 + 0.01 * torch.randn(n, 1)
        self.num_train, self.batch_size = num_train, batch_size

    def loader(self, train):
        part = slice(0, self.num_train) if train else slice(self.num_train, None)
        dataset = torch.utils.data.TensorDataset(self.X[part], self.y[part])
        return torch.utils.data.DataLoader(dataset, self.batch_size, shuffle=train)


class WeightDecay(nn.Module):
    def __init__(self, num_inputs, wd, lr):
        super().__init__()
        self.net = nn.Linear(num_inputs, 1)
        self.wd, self.lr = wd, lr
        self.losses = []

    def forward(self, X):
        return self.net(X)

    def loss(self, y_hat, y):
        return nn.functional.mse_loss(y_hat, y)

    def training_step(self, batch):
        return self.loss(self(*batch[:-1]), batch[-1])

    def validation_step(self, batch):
        self.losses.append(self.loss(self(*batch[:-1]), batch[-1]).item())

    def configure_optimizers(self):
        return torch.optim.SGD(
            [{"params": self.net.weight, "weight_decay": self.wd}, {"params": self.net.bias}],
            lr=self.lr,
        )


class Trainer:
    def __init__(self, max_epochs, gradient_clip_val=0):
        self.max_epochs, self.gradient_clip_val = max_epochs, gradient_clip_val

    def fit(self, model, data):
        self.train_dataloader = data.loader(train=True)
        self.val_dataloader = data.loader(train=False)
        self.model = model
        self.optim = model.configure_optimizers()
        for self.epoch in range(self.max_epochs):  # noqa: B020 (as d2l writes it)
            self.fit_epoch()
            print(f"epoch {self.epoch}: val {sum(model.losses[-5:]) / 5:.5f}")

    def fit_epoch(self):
        self.model.train()
        for batch in self.train_dataloader:
            loss = self.model.training_step(batch)
            self.optim.zero_grad()
            with torch.no_grad():
                loss.backward()
                if self.gradient_clip_val > 0:
                    self.clip_gradients(self.gradient_clip_val, self.model)
                self.optim.step()
        self.model.eval()
        for batch in self.val_dataloader:
            with torch.no_grad():
                self.model.validation_step(batch)

    def clip_gradients(self, grad_clip_val, model):
        params = [p for p in model.parameters() if p.requires_grad]
        norm = torch.sqrt(sum(torch.sum(p.grad**2) for p in params))
        if norm > grad_clip_val:
            for param in params:
                param.grad[:] *= grad_clip_val / norm


model = WeightDecay(num_inputs=40, wd=3.0, lr=0.01)
Trainer(max_epochs=4, gradient_clip_val=0.5).fit(model, Data())
print("L2 norm of w:", model.net.weight.norm().item())
