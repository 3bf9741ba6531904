# Correct: d2l-ai/d2l-en linear regression from scratch: sgd() updates, then param.grad.zero_()
# mypy: ignore-errors
import random

import torch

torch.manual_seed(133)
random.seed(133)


def make_data(w, b, n):
    """y = Xw + b plus a little noise."""
    X = torch.normal(0, 1, (n, len(w)))
    y = X @ w + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape(-1, 1)


def minibatches(batch_size, features, labels):
    order = list(range(len(features)))
    random.shuffle(order)
    for start in range(0, len(features), batch_size):
        picked = torch.tensor(order[start : start + batch_size])
        yield features[picked], labels[picked]


def linreg(X, w, b):
    return X @ w + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params, lr, batch_size):
    """Minibatch stochastic gradient descent, then the gradients emptied for the next batch."""
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


true_w, true_b = torch.tensor([2.0, -3.4]), 4.2
features, labels = make_data(true_w, true_b, 500)

w = torch.normal(0, 0.01, size=(2, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr, num_epochs, batch_size = 0.03, 3, 10
net, loss = linreg, squared_loss

for epoch in range(num_epochs):
    for X, y in minibatches(batch_size, features, labels):
        batch_loss = loss(net(X, w, b), y)
        batch_loss.sum().backward()
        sgd([w, b], lr, batch_size)
    with torch.no_grad():
        train_l = loss(net(features, w, b), labels)
        print(f"epoch {epoch + 1}, loss {float(train_l.mean()):f}")
print(
    "error in w:", (true_w - w.reshape(true_w.shape)).tolist(), "error in b:", (true_b - b).item()
)
