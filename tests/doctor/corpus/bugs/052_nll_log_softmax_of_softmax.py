# From: pytorch/examples mnist/main.py's log_softmax + nll_loss with a softmax left in forward()
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.fc2 = nn.Linear(64, 5)

    def forward(self, x):
        return F.softmax(self.fc2(F.relu(self.fc1(x))), dim=1)  # "probabilities, for predict()"


torch.manual_seed(151)
X = torch.randn(240, 20)
y = X[:, :5].argmax(dim=1)
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(3):
    model.train()
    for i in range(0, 240, 24):
        optimizer.zero_grad()
        output, target = model(X[i : i + 24]), y[i : i + 24]
        loss = F.nll_loss(F.log_softmax(output, dim=1), target)  # doctor: softmax_before_loss
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
