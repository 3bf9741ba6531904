"""Loops the recorder's tests share, as a notebook cell holds them."""

from __future__ import annotations


def makemore(embed: int = 2, hidden: int = 100, examples: int = 50, iterations: int = 100) -> str:
    """Makemore part 2's training loop, small (Karpathy's lectures, rebuilt in our words): five
    bare tensors in a list, ``requires_grad`` set in a loop, ``p.grad = None`` and the update
    through ``.data``. ``W1`` holds ``3 * embed * hidden`` elements (600 by default: a summary)."""
    width = 3 * embed
    return f"""\
import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((27, {embed}), generator=g)
W1 = torch.randn(({width}, {hidden}), generator=g)
b1 = torch.randn({hidden}, generator=g)
W2 = torch.randn(({hidden}, 27), generator=g)
b2 = torch.randn(27, generator=g)
parameters = [C, W1, b1, W2, b2]
for p in parameters:
    p.requires_grad = True
X = torch.randint(0, 27, ({examples}, 3), generator=g)
Y = torch.randint(0, 27, ({examples},), generator=g)
for i in range({iterations}):
    ix = torch.randint(0, X.shape[0], (16,), generator=g)
    emb = C[X[ix]]
    h = torch.tanh(emb.view(-1, {width}) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Y[ix])
    for p in parameters:
        p.grad = None
    loss.backward()
    for p in parameters:
        p.data += -0.1 * p.grad
"""
