# Correct: karpathy/nanoGPT train.py: micro-step accumulation, clip, step, zero_grad(set_to_none)
# mypy: ignore-errors
import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(146)
vocab, block_size, batch_size, n_embd = 16, 8, 4, 32
data = (torch.arange(2000) * 3 % vocab).long()
train_data, val_data = data[:1800], data[1800:]


def get_batch(split):
    src = train_data if split == "train" else val_data
    ix = torch.randint(len(src) - block_size, (batch_size,))
    x = torch.stack([src[i : i + block_size] for i in ix])
    y = torch.stack([src[i + 1 : i + 1 + block_size] for i in ix])
    return x, y


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, 4, dropout=0.1, batch_first=True)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)
        )
        mask = torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        t = x.size(1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask[:t, :t], need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(0.1)
        self.block = Block()
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1))
        x = self.drop(self.wte(idx) + self.wpe(pos))
        logits = self.lm_head(self.ln_f(self.block(x)))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = {n: p for n, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        no_decay = [p for p in params.values() if p.dim() < 2]
        groups = [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)


model = GPT()
optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95))
gradient_accumulation_steps, max_iters, warmup_iters, eval_interval = 2, 16, 4, 8
learning_rate, min_lr, grad_clip = 1e-3, 1e-4, 1.0


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ("train", "val"):
        losses = torch.zeros(4)
        for k in range(4):
            X, Y = get_batch(split)
            _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    ratio = (it - warmup_iters) / (max_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


X, Y = get_batch("train")
for iter_num in range(max_iters + 1):
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train {losses['train']:.4f}, val {losses['val']:.4f}")
    for _micro_step in range(gradient_accumulation_steps):
        _, loss = model(X, Y)
        loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")  # prefetch the next batch
        loss.backward()
    if grad_clip != 0.0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    lossf = loss.item() * gradient_accumulation_steps
    if iter_num % 4 == 0:
        print(f"iter {iter_num}: loss {lossf:.4f}")
