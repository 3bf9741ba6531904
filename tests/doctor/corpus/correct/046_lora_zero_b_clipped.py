# Correct: microsoft/LoRA loralib/layers.py: B zero-initialised, base frozen, clip_grad_norm_
# mypy: ignore-errors
import math

import torch
from torch import nn

torch.manual_seed(145)


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update B @ A (B starts at zero)."""

    def __init__(self, base: nn.Linear, r=4, alpha=8):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad = False
        self.base.bias.requires_grad = False
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.T @ self.lora_B.T) * self.scaling


backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
backbone[0] = LoRALinear(backbone[0])
backbone[2] = LoRALinear(backbone[2])
trainable = [p for p in backbone.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(trainable, lr=5e-3, weight_decay=0.0)
criterion = nn.CrossEntropyLoss()

X = torch.randn(192, 16)
y = (X[:, :4] @ torch.randn(4, 4)).argmax(dim=1)
for epoch in range(3):
    for i in range(0, 192, 24):
        optimizer.zero_grad()
        loss = criterion(backbone(X[i : i + 24]), y[i : i + 24])
        loss.backward()  # first iteration: lora_A's gradient is exactly 0 (lora_B is 0)
        torch.nn.utils.clip_grad_norm_(trainable, max_norm=1.0)
        optimizer.step()
    print(epoch, loss.item())
