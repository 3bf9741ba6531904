# From: Stack Overflow question: 'NLLLoss is negative' (F.nll_loss fed softmax, not log_softmax)
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


torch.manual_seed(15)
X = torch.randn(256, 20)
y = torch.randint(0, 4, (256,))
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for i in range(0, 256, 32):
        optimizer.zero_grad()
        output = model(X[i : i + 32])
        loss = F.nll_loss(output, y[i : i + 32])  # doctor: softmax_before_loss
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
