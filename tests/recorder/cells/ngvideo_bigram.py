# Source: karpathy/ng-video-lecture, bigram.py (the bigram language model of "Let's build GPT") — rebuilt small in our own words  # noqa: E501
"""Karpathy's bigram model: an embedding table read as next-character logits, random batches
from ``get_batch``, AdamW, and the loop in the cell, which first (every ``eval_interval``
steps, the very first included) calls ``estimate_loss``: a function of an earlier cell under
``@torch.no_grad()`` that switches ``model.eval()``, runs ``eval_iters = 200`` batches of each
split in a loop of its own, and switches back with ``model.train()``."""

SETUP: tuple[str, ...] = (
    """\
import random

import torch
import torch.nn as nn
from torch.nn import functional as F

# hyperparameters, shrunk to run in a second
batch_size = 32  # sequences per batch
block_size = 8  # the longest context
max_iters = 30
eval_interval = 10
learning_rate = 1e-2
device = "cpu"
eval_iters = 200
torch.manual_seed(1337)

# a few KB of seeded babble stands in for tiny Shakespeare
words = "to be or not the king is dead long live my lord what say you and thou art".split()
babble = random.Random(1337)
sentences = [" ".join(babble.choices(words, k=babble.randint(3, 9))) for _ in range(150)]
text = ". ".join(sentences) + "."

# the characters are the tokens
chars = sorted(set(text))
vocab_size = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}
itos = dict(enumerate(chars))
encode = lambda s: [stoi[c] for c in s]
decode = lambda ids: "".join(itos[i] for i in ids)

data = torch.tensor(encode(text), dtype=torch.long)
n = int(0.9 * len(data))  # 90% to train on, the rest to validate
train_data = data[:n]
val_data = data[n:]
print(len(text), "characters,", vocab_size, "distinct")
""",
    """\
def get_batch(split):
    # batch_size random windows of the split, and the same shifted by one
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix])
    return x.to(device), y.to(device)


@torch.no_grad()
def estimate_loss():
    # the mean loss of eval_iters random batches of each split, dropout and the like off
    means = {}
    model.eval()
    for split in ["train", "val"]:
        values = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            values[k] = loss.item()
        means[split] = values.mean()
    model.train()
    return means


class BigramLanguageModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        # row i: the logits of the character after character i
        self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.token_embedding_table(idx)  # (B, T, C)
        if targets is None:
            return logits, None
        B, T, C = logits.shape
        loss = F.cross_entropy(logits.view(B * T, C), targets.view(B * T))
        return logits, loss

    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            logits, _ = self(idx)
            probs = F.softmax(logits[:, -1, :], dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


model = BigramLanguageModel(vocab_size)
m = model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
""",
)

CELL: str = """\
for iter in range(max_iters):

    # now and then, the loss on both splits
    if iter % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")

    xb, yb = get_batch("train")

    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()

context = torch.zeros((1, 1), dtype=torch.long, device=device)
print(decode(m.generate(context, max_new_tokens=80)[0].tolist()))
"""
