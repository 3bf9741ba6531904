# Correct: karpathy/nn-zero-to-hero makemore part 2: [C, W1, b1, W2, b2], p.grad = None, p.data +=
# mypy: ignore-errors
import random

import torch
import torch.nn.functional as F

words = [
    "emma",
    "olivia",
    "ava",
    "isabella",
    "sophia",
    "charlotte",
    "mia",
    "amelia",
    "harper",
    "evelyn",
    "abigail",
    "emily",
    "elizabeth",
    "mila",
    "ella",
    "avery",
    "sofia",
    "camila",
    "aria",
    "scarlett",
    "victoria",
    "madison",
    "luna",
    "grace",
    "chloe",
    "penelope",
    "layla",
    "riley",
    "zoey",
    "nora",
    "lily",
    "eleanor",
    "hannah",
    "lillian",
    "addison",
    "aubrey",
    "ellie",
    "stella",
]
chars = sorted(set("".join(words)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
vocab = len(stoi)
block_size = 3


def build_dataset(names):
    X, Y = [], []
    for w in names:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = [*context[1:], ix]
    return torch.tensor(X), torch.tensor(Y)


random.seed(42)
random.shuffle(words)
n1 = int(0.8 * len(words))
Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:])

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((vocab, 4), generator=g)
W1 = torch.randn((block_size * 4, 32), generator=g) * 0.2
b1 = torch.randn(32, generator=g) * 0.01
W2 = torch.randn((32, vocab), generator=g) * 0.01
b2 = torch.zeros(vocab)
parameters = [C, W1, b1, W2, b2]
print(sum(p.nelement() for p in parameters), "parameters")
for p in parameters:
    p.requires_grad = True

lossi = []
for i in range(200):
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    emb = C[Xtr[ix]]
    h = torch.tanh(emb.view(-1, block_size * 4) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Ytr[ix])
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < 150 else 0.01
    for p in parameters:
        p.data += -lr * p.grad
    lossi.append(loss.log10().item())
print("last training loss", loss.item())

# the lecture's dev loss, evaluated as written there
emb = C[Xdev]
h = torch.tanh(emb.view(-1, block_size * 4) @ W1 + b1)
logits = h @ W2 + b2
loss = F.cross_entropy(logits, Ydev)
print("dev loss", loss.item())
