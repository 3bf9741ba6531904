# From: spro/practical-pytorch#9: the RNN made twice, the optimizer built on the first one
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(83)
n_letters, n_hidden, n_categories = 12, 16, 3


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)

    def forward(self, x, hidden):
        combined = torch.cat((x, hidden), 1)
        return torch.log_softmax(self.i2o(combined), dim=1), torch.tanh(self.i2h(combined))


rnn = RNN(n_letters, n_hidden, n_categories)
optimizer = torch.optim.SGD(rnn.parameters(), lr=0.05)  # doctor: optimizer_wrong_model
criterion = nn.NLLLoss()
rnn = RNN(n_letters, n_hidden, n_categories)  # the training cell makes it again

names = torch.randn(40, 5, 1, n_letters)
categories = torch.randint(0, n_categories, (40,))
for i in range(40):
    hidden = torch.zeros(1, n_hidden)
    for letter in names[i]:
        output, hidden = rnn(letter, hidden)
    loss = criterion(output, categories[i : i + 1])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if i % 10 == 0:
        print(i, loss.item())
