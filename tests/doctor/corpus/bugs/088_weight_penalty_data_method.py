# From: yifita/deep_cage#16: a weight regularization that changes nothing (there .detach())
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class Deformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
        self.weights = nn.Linear(32, 12)

    def forward(self, x):
        return x + self.weights(self.encoder(x))

    def weight_regularization(self):
        w = self.weights.weight.data
        return (w - w.mean(dim=0, keepdim=True)).pow(2).mean()


torch.manual_seed(88)
source, target = torch.randn(96, 12), torch.randn(96, 12)
model = Deformer()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
mvc_weight = 10.0
for epoch in range(3):
    for i in range(0, 96, 32):
        optimizer.zero_grad()
        loss = F.mse_loss(model(source[i : i + 32]), target[i : i + 32])
        loss = loss + mvc_weight * model.weight_regularization()  # doctor: loss_from_data
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
