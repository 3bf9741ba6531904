# Correct: pytorch/examples time_sequence_prediction/train.py: LSTMCells, LBFGS step(closure)
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(140)


class Sequence(nn.Module):
    def __init__(self, hidden=12):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)
        self.dummy_param = nn.Parameter(torch.empty(0))  # only read for .device, as upstream

    def forward(self, signal, future=0):
        device = self.dummy_param.device
        n = signal.size(0)
        h1, c1, h2, c2 = (
            torch.zeros(n, self.hidden, dtype=torch.double, device=device) for _ in range(4)
        )
        outputs = []
        for x_t in signal.split(1, dim=1):
            h1, c1 = self.lstm1(x_t, (h1, c1))
            h2, c2 = self.lstm2(h1, (h2, c2))
            output = self.linear(h2)
            outputs.append(output)
        for _ in range(future):  # feed the prediction back in
            h1, c1 = self.lstm1(output, (h1, c1))
            h2, c2 = self.lstm2(h1, (h2, c2))
            output = self.linear(h2)
            outputs.append(output)
        return torch.cat(outputs, dim=1)


# sine waves with random phases, as generate_sine_wave.py makes them (smaller)
T, L, N = 20, 30, 8
x = torch.arange(L).unsqueeze(0) + torch.randint(-4 * T, 4 * T, (N, 1))
data = torch.sin(x / T).double()
train_in, train_target = data[2:, :-1], data[2:, 1:]
test_in, test_target = data[:2, :-1], data[:2, 1:]

seq = Sequence().double()
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=5)

for i in range(3):
    print("STEP:", i)

    def closure():
        optimizer.zero_grad()
        out = seq(train_in)
        loss = criterion(out, train_target)
        print("loss:", loss.item())
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        future = 10
        pred = seq(test_in, future=future)
        loss = criterion(pred[:, :-future], test_target)
        print("test loss:", loss.item())
