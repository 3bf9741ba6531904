# mypy: ignore-errors
"""After karpathy/nanoGPT's train.py, small: a character-level GPT (two blocks of causal
self-attention), AdamW with weight decay on the matrices only, gradient accumulation over micro
steps, clipping, the learning rate set by hand in the param groups, and an estimate of the loss
under ``torch.no_grad()`` now and then.

    python bench/loops/gpt_char.py STEPS
"""

import math
import sys

import torch
from torch import nn
from torch.nn import functional as F

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
torch.manual_seed(0)
VOCAB, CONTEXT, WIDTH, HEADS, BLOCKS, BATCH, MICRO = 65, 32, 64, 4, 2, 8, 2
text = torch.randint(0, VOCAB, (20_000,))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
        self.mlp = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH)
        )
        mask = torch.triu(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, WIDTH)
        self.positions = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.Sequential(*[Block() for _ in range(BLOCKS)])
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.tokens.weight  # tied

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tokens(idx) + self.positions(torch.arange(idx.size(1)))
        return self.head(self.ln(self.blocks(x)))


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    start = torch.randint(0, text.numel() - CONTEXT - 1, (BATCH,))
    x = torch.stack([text[s : s + CONTEXT] for s in start])
    y = torch.stack([text[s + 1 : s + 1 + CONTEXT] for s in start])
    return x, y


model = GPT()
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
optimizer = torch.optim.AdamW(
    [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3
)
for step in range(STEPS):
    lr = 1e-3 * 0.5 * (1 + math.cos(math.pi * step / max(STEPS, 1)))
    for group in optimizer.param_groups:
        group["lr"] = lr
    for _ in range(MICRO):
        x, y = batch()
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1)) / MICRO
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if step % 20 == 0:
        model.eval()
        with torch.no_grad():
            x, y = batch()
            print(step, F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1)).item())
        model.train()
