# From: Lightning automatic optimization: self.losses.append(loss) in a step(closure) training_step
# mypy: ignore-errors
import torch
from torch import nn


class LitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
        self.losses = []

    def training_step(self, batch):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.losses.append(loss)  # doctor: log_tensor
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def fit(module, batches, epochs):
    """What the framework's automatic loop does for each batch: step(closure), the closure
    running the training step, zero_grad and backward."""
    optimizer = module.configure_optimizers()
    for epoch in range(epochs):
        for batch in batches:

            def closure(batch=batch):
                loss = module.training_step(batch)
                optimizer.zero_grad()
                loss.backward()
                return loss

            optimizer.step(closure)
        print(epoch, module.losses[-1].item())


torch.manual_seed(159)
X = torch.randn(192, 10)
y = X[:, :3].argmax(dim=1)
fit(LitClassifier(), list(zip(X.split(24), y.split(24), strict=True)), 3)
