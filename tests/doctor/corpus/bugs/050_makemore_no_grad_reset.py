# From: karpathy/nn-zero-to-hero makemore part 2 without `for p in parameters: p.grad = None`
# mypy: ignore-errors
import torch
import torch.nn.functional as F

words = ["anna", "bob", "carla", "dora", "emil", "fritz", "greta", "hans", "ida", "jonas", "karl"]
chars = sorted(set("".join(words)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
block_size = 3
X, Y = [], []
for w in words:
    context = [0] * block_size
    for ch in w + ".":
        X.append(context)
        Y.append(stoi[ch])
        context = [*context[1:], stoi[ch]]
X, Y = torch.tensor(X), torch.tensor(Y)

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((len(stoi), 2), generator=g)
W1 = torch.randn((block_size * 2, 16), generator=g) * 0.3
b1 = torch.randn(16, generator=g) * 0.01
W2 = torch.randn((16, len(stoi)), generator=g) * 0.01
b2 = torch.zeros(len(stoi))
parameters = [C, W1, b1, W2, b2]
for p in parameters:
    p.requires_grad = True

for i in range(60):
    ix = torch.randint(0, X.shape[0], (16,), generator=g)
    emb = C[X[ix]]
    h = torch.tanh(emb.view(-1, block_size * 2) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Y[ix])
    loss.backward()  # doctor: skip_zero_grad
    for p in parameters:
        p.data += -0.05 * p.grad
    if i % 20 == 0:
        print(i, loss.item())
