# Correct: pytorch/examples dcgan/main.py: errD = errD_real + errD_fake each batch, only printed
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(136)
nz, batch_size = 4, 32
real_label, fake_label = 1.0, 0.0
dataset = torch.randn(320, 2) * 0.3 + torch.tensor([1.0, -1.0])


def weights_init(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, 0.0, 0.2)
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.BatchNorm1d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


netG = nn.Sequential(nn.Linear(nz, 16), nn.BatchNorm1d(16), nn.ReLU(True), nn.Linear(16, 2))
netD = nn.Sequential(
    nn.Linear(2, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 1), nn.Sigmoid()
)
netG.apply(weights_init)
netD.apply(weights_init)
criterion = nn.BCELoss()
optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))

for epoch in range(2):
    for i, real in enumerate(dataset.split(batch_size)):
        # (1) D: maximise log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        b_size = real.size(0)
        label = torch.full((b_size,), real_label)
        output = netD(real).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        noise = torch.randn(b_size, nz)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach()).view(-1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        # (2) G: maximise log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake).view(-1)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()

        if i % 5 == 0:
            print(
                f"[{epoch}/2][{i}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} "
                f"D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}"
            )
