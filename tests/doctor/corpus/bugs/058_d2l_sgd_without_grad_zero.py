# From: d2l-ai/d2l-en linear regression from scratch with sgd()'s param.grad.zero_() forgotten
# mypy: ignore-errors
import torch

torch.manual_seed(157)
true_w, true_b = torch.tensor([2.0, -3.4]), 4.2
features = torch.randn(300, 2)
labels = (features @ true_w + true_b + 0.01 * torch.randn(300)).reshape(-1, 1)


def linreg(X, w, b):
    return X @ w + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params, lr, batch_size):
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size


w = torch.normal(0, 0.01, size=(2, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr, batch_size = 0.03, 10

for epoch in range(2):
    for start in range(0, 300, batch_size):
        X, y = features[start : start + batch_size], labels[start : start + batch_size]
        batch_loss = squared_loss(linreg(X, w, b), y)
        batch_loss.sum().backward()  # doctor: skip_zero_grad
        sgd([w, b], lr, batch_size)
    with torch.no_grad():
        train_l = squared_loss(linreg(features, w, b), labels).mean()
        print(f"epoch {epoch + 1}, loss {float(train_l):f}")
