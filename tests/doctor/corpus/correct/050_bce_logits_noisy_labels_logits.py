# Correct: Freesound-Audio-Tagging-2019#1 fixed: both BCEWithLogits calls get the raw outputs
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


def tagging_loss(model, x, y, xn, yn):
    curated = F.binary_cross_entropy_with_logits(model(x), y)
    pn = model(xn)
    noisy = F.binary_cross_entropy_with_logits(pn, yn)
    return curated + 0.5 * noisy


torch.manual_seed(163)
mixing = torch.randn(20, 8)
clips = torch.randn(256, 20)
tags = (clips @ mixing > 0.5).float()
noisy_clips = torch.randn(256, 20)
noisy_tags = ((noisy_clips @ mixing + 0.5 * torch.randn(256, 8)) > 0.5).float()
model = nn.Sequential(nn.Linear(20, 48), nn.ReLU(), nn.Linear(48, 8))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(3):
    curated = zip(clips.split(32), tags.split(32), strict=True)
    noisy = zip(noisy_clips.split(32), noisy_tags.split(32), strict=True)
    for (x, y), (xn, yn) in zip(curated, noisy, strict=True):
        optimizer.zero_grad()
        loss = tagging_loss(model, x, y, xn, yn)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
