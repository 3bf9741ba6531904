# Correct: ddp-tutorial-series single_gpu.py's one output trained with a logits BCE loss
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, train_data, optimizer):
        self.model = model
        self.train_data = train_data
        self.optimizer = optimizer

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.binary_cross_entropy_with_logits(output, targets)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            for source, targets in self.train_data:
                last = self._run_batch(source, targets)
            print(epoch, last)


torch.manual_seed(168)
inputs = torch.rand(256, 20)
scores = torch.sigmoid((inputs - 0.5) @ torch.randn(20, 1))  # one target in [0, 1] per sample
train_data = DataLoader(TensorDataset(inputs, scores), batch_size=32, shuffle=True)
model = torch.nn.Linear(20, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
Trainer(model, train_data, optimizer).train(3)
