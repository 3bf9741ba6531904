# Correct: pytorch/examples word_language_model, dropout 0: an RNN left in eval(), no effect
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(139)


class SequenceRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(3, 16, num_layers=2, dropout=0.0, batch_first=True)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        seq, _ = self.rnn(x)
        return self.out(seq[:, -1])


X = torch.randn(200, 6, 3)
y = X.sum(dim=(1, 2)).unsqueeze(1) * 0.1
model = SequenceRegressor()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.MSELoss()

model.train()
for epoch in range(3):
    for i in range(0, 160, 16):
        optimizer.zero_grad()
        loss = criterion(model(X[i : i + 16]), y[i : i + 16])
        loss.backward()
        optimizer.step()
    model.eval()  # never switched back: nothing in this model depends on the mode
    with torch.no_grad():
        val = criterion(model(X[160:]), y[160:]).item()
    print(epoch, loss.item(), val)
