# Correct: d2l-ai/d2l-en chapter_optimization/adam.md, Adam from scratch, p.grad.data.zero_()
# mypy: ignore-errors
import torch

torch.manual_seed(48)
features = torch.randn(200, 3)
labels = features @ torch.tensor([[1.5], [-2.0], [0.3]]) + 0.2 + 0.01 * torch.randn(200, 1)
w = torch.normal(0.0, 0.01, size=(3, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)
moments = [(torch.zeros(3, 1), torch.zeros(3, 1)), (torch.zeros(1), torch.zeros(1))]
settings = {"lr": 0.01, "t": 1}


def adam_step(params, moments, settings):
    beta1, beta2, eps = 0.9, 0.999, 1e-6
    for p, (v, s) in zip(params, moments, strict=True):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = beta2 * s + (1 - beta2) * torch.square(p.grad)
            v_hat = v / (1 - beta1 ** settings["t"])
            s_hat = s / (1 - beta2 ** settings["t"])
            p[:] -= settings["lr"] * v_hat / (torch.sqrt(s_hat) + eps)
        p.grad.data.zero_()  # cleared through .data: no version of the buffer changes
    settings["t"] += 1


for epoch in range(2):
    for start in range(0, 200, 20):
        X, y = features[start : start + 20], labels[start : start + 20]
        loss = ((X @ w + b - y) ** 2 / 2).mean()
        loss.backward()
        adam_step([w, b], moments, settings)
    print(epoch, float(((features @ w + b - labels) ** 2 / 2).mean()))
