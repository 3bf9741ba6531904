# From: Stack Overflow question: 'Pytorch: nn.Dropout vs. F.dropout' (F.dropout on in eval mode)
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class Regressor(nn.Module):
    def __init__(self, p=0.3):
        super().__init__()
        self.p = p
        self.hidden = nn.Linear(6, 48)
        self.out = nn.Linear(48, 1)

    def forward(self, x):
        h = torch.tanh(self.hidden(x))
        h = F.dropout(h, p=self.p)  # doctor: dropout_in_eval
        return self.out(h)


torch.manual_seed(78)
X = torch.randn(200, 6)
y = X @ torch.randn(6, 1) + 0.05 * torch.randn(200, 1)
X_train, y_train, X_val, y_val = X[:160], y[:160], X[160:], y[160:]

model = Regressor()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for epoch in range(4):
    for i in range(0, len(X_train), 20):
        optimizer.zero_grad()
        loss = F.mse_loss(model(X_train[i : i + 20]), y_train[i : i + 20])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())

model.eval()
with torch.no_grad():
    first = F.mse_loss(model(X_val), y_val).item()
    second = F.mse_loss(model(X_val), y_val).item()
print("val mse", first, second)
