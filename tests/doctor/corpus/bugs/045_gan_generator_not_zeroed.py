# From: PyTorch forum thread: 'GAN generator diverges' (opt_g.zero_grad() missing, D's is there)
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(44)
real_data = torch.randn(512, 2) * 0.5 + 1.0
latent = 4
G = nn.Sequential(nn.Linear(latent, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()

for epoch in range(2):
    for real in real_data.split(32):
        n = real.shape[0]
        fake = G(torch.randn(n, latent))
        opt_d.zero_grad()
        loss_d = bce(D(real), torch.ones(n, 1)) + bce(D(fake.detach()), torch.zeros(n, 1))
        loss_d.backward()
        opt_d.step()
        loss_g = bce(D(fake), torch.ones(n, 1))
        loss_g.backward()  # doctor: skip_zero_grad
        opt_g.step()
    print(epoch, loss_d.item(), loss_g.item())
