# From: PyTorch forum thread: 'memory leak when storing losses in a list for plotting'
# mypy: ignore-errors
import torch
from torch import nn


class AutoEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))
        self.decoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


torch.manual_seed(13)
data = torch.randn(320, 16)
model = AutoEncoder()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
history = []

for epoch in range(3):
    for batch in data.split(32):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(batch), batch)
        loss.backward()
        optimizer.step()
        history.append(loss)  # doctor: log_tensor
    print(epoch, torch.stack(history[-10:]).mean().item())
