# From: PyTorch forum thread: 'decoder weights never change' (optimizer given encoder.parameters())
# mypy: ignore-errors
import torch
from torch import nn


class Seq2Vec(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
        self.decoder = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


torch.manual_seed(37)
data = torch.randn(256, 16)
model = Seq2Vec()
optimizer = torch.optim.Adam(model.encoder.parameters(), lr=1e-3)  # doctor: not_in_optimizer

for epoch in range(3):
    for batch in data.split(32):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(batch), batch)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
