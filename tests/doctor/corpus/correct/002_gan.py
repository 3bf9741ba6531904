# Correct: a GAN loop (G's backward writes D's .grad, D's zero_grad clears it before D's backward)
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(101)
real_data = torch.randn(512, 2) * 0.5 + torch.tensor([2.0, -1.0])
latent = 4

G = nn.Sequential(nn.Linear(latent, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()

for epoch in range(2):
    for real in real_data.split(32):
        n = real.shape[0]
        ones, zeros = torch.ones(n, 1), torch.zeros(n, 1)
        # the discriminator
        opt_d.zero_grad()
        fake = G(torch.randn(n, latent))
        loss_d = bce(D(real), ones) + bce(D(fake.detach()), zeros)
        loss_d.backward()
        opt_d.step()
        # the generator
        opt_g.zero_grad()
        loss_g = bce(D(fake), ones)
        loss_g.backward()
        opt_g.step()
    print(epoch, loss_d.item(), loss_g.item())
