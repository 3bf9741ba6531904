# Correct: an encoder and a decoder, each with its own optimizer and lr, both stepped each batch
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(119)
data = torch.randn(192, 12)
loader = DataLoader(TensorDataset(data), batch_size=24, shuffle=True)
encoder = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 4))
decoder = nn.Sequential(nn.Linear(4, 24), nn.ReLU(), nn.Linear(24, 12))
enc_opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
dec_opt = torch.optim.SGD(decoder.parameters(), lr=0.05, momentum=0.9)

for epoch in range(3):
    for (batch,) in loader:
        enc_opt.zero_grad()
        dec_opt.zero_grad()
        loss = nn.functional.mse_loss(decoder(encoder(batch)), batch)
        loss.backward()
        enc_opt.step()
        dec_opt.step()
    print(epoch, loss.item())
