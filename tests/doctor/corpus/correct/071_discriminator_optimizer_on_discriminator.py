# Correct: D's optimizer over the discriminator's parameters
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(84)
generator = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
discriminator = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
optimizer_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=4e-4)

real_images = torch.randn(128, 16) * 0.5 + 1.0
for step in range(8):
    real = real_images[step * 16 : (step + 1) * 16]
    fake = generator(torch.randn(16, 8))

    optimizer_d.zero_grad()
    real_score, fake_score = discriminator(real), discriminator(fake.detach())
    loss_d = F.relu(1 - real_score).mean() + F.relu(1 + fake_score).mean()
    loss_d.backward()
    optimizer_d.step()

    optimizer_g.zero_grad()
    loss_g = -discriminator(fake).mean()
    loss_g.backward()
    optimizer_g.step()
    print(step, loss_d.item(), loss_g.item())
