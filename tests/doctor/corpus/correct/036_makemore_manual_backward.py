# Correct: karpathy/nn-zero-to-hero makemore part 4: backward written by hand, no .backward()
# mypy: ignore-errors
import torch
import torch.nn.functional as F

torch.manual_seed(135)
vocab, block_size, n_embd, n_hidden = 12, 3, 4, 24
stream = torch.arange(600) % vocab  # a cyclic "language": the next token follows from the last
stream = torch.where(torch.rand(600) < 0.1, torch.randint(0, vocab, (600,)), stream)
Xtr = torch.stack([stream[i : i + block_size] for i in range(len(stream) - block_size)])
Ytr = stream[block_size:]

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((vocab, n_embd), generator=g)
W1 = (
    torch.randn((n_embd * block_size, n_hidden), generator=g)
    * (5 / 3)
    / (n_embd * block_size) ** 0.5
)
b1 = torch.randn(n_hidden, generator=g) * 0.1  # useless under batch norm, kept as in the lecture
W2 = torch.randn((n_hidden, vocab), generator=g) * 0.1
b2 = torch.randn(vocab, generator=g) * 0.1
bngain = torch.randn((1, n_hidden), generator=g) * 0.1 + 1.0
bnbias = torch.randn((1, n_hidden), generator=g) * 0.1
parameters = [C, W1, b1, W2, b2, bngain, bnbias]
for p in parameters:
    p.requires_grad = True

n = 32
lossi = []
with torch.no_grad():
    for i in range(120):
        ix = torch.randint(0, Xtr.shape[0], (n,), generator=g)
        Xb, Yb = Xtr[ix], Ytr[ix]

        # forward
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hprebn = embcat @ W1 + b1
        bnmean = hprebn.mean(0, keepdim=True)
        bnvar = hprebn.var(0, keepdim=True, unbiased=True)
        bnvar_inv = (bnvar + 1e-5) ** -0.5
        bnraw = (hprebn - bnmean) * bnvar_inv
        hpreact = bngain * bnraw + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)

        # backward, by hand
        dlogits = F.softmax(logits, 1)
        dlogits[range(n), Yb] -= 1
        dlogits /= n
        dh = dlogits @ W2.T
        dW2 = h.T @ dlogits
        db2 = dlogits.sum(0)
        dhpreact = (1.0 - h**2) * dh
        dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
        dbnbias = dhpreact.sum(0, keepdim=True)
        dhprebn = (
            bngain
            * bnvar_inv
            / n
            * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
        )
        dembcat = dhprebn @ W1.T
        dW1 = embcat.T @ dhprebn
        db1 = dhprebn.sum(0)
        demb = dembcat.view(emb.shape)
        dC = torch.zeros_like(C)
        dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))
        grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]

        # update
        lr = 0.1 if i < 100 else 0.01
        for p, grad in zip(parameters, grads, strict=True):
            p.data += -lr * grad
        if i % 40 == 0:
            print(f"{i:4d}: {loss.item():.4f}")
        lossi.append(loss.log10().item())
print("final", loss.item())
