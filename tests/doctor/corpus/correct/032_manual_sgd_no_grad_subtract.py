# Correct: pytorch/tutorials examples_nn/polynomial_nn.py: param -= lr * param.grad under no_grad
# mypy: ignore-errors
import math

import torch
from torch import nn

torch.manual_seed(131)
x = torch.linspace(-math.pi, math.pi, 400)
target = torch.sin(x)
exponents = torch.tensor([1, 2, 3])
inputs = x.unsqueeze(-1).pow(exponents)  # (400, 3): x, x^2, x^3

model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
loss_fn = nn.MSELoss(reduction="sum")
learning_rate = 4e-6

for t in range(300):
    prediction = model(inputs)
    loss = loss_fn(prediction, target)
    if t % 100 == 99:
        print(t, loss.item())
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

linear = model[0]
print(f"y = {linear.bias.item():.3f} + {linear.weight[0, 0].item():.3f} x + ...")
