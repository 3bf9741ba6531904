# From: automan000/Convolutional_LSTM_PyTorch#17: peephole weights are not nn.Parameters
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class PeepholeCell(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.gates = nn.Linear(input_size + hidden_size, 4 * hidden_size)
        self.Wci = torch.zeros(1, hidden_size, requires_grad=True)
        self.Wcf = torch.zeros(1, hidden_size, requires_grad=True)

    def forward(self, x, h, c):
        i, f, g, o = self.gates(torch.cat([x, h], dim=1)).chunk(4, dim=1)
        i = torch.sigmoid(i + c * self.Wci)
        f = torch.sigmoid(f + c * self.Wcf)
        c = f * c + i * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


torch.manual_seed(92)
cell, head = PeepholeCell(4, 8), nn.Linear(8, 1)
params = [*cell.parameters(), *head.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-2)  # doctor: not_in_optimizer
sequences, targets = torch.randn(32, 10, 4), torch.randn(32, 1)
for epoch in range(4):
    h = c = torch.zeros(32, 8)
    for t in range(10):
        h, c = cell(sequences[:, t], h, c)
    loss = F.mse_loss(head(h), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
