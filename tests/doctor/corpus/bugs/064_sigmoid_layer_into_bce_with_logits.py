# From: NVIDIA-Merlin/models#1175: BinaryOutput's sigmoid, then BCEWithLogitsLoss (sigmoid twice)
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(164)
X = torch.randn(320, 12)
y = ((X[:, :4].sum(dim=1) - X[:, 4]) > 0).float().unsqueeze(1)
model = nn.Sequential(
    nn.Linear(12, 32),
    nn.ReLU(),
    nn.Linear(32, 1),
    nn.Sigmoid(),  # the output block's "probability"
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
criterion = nn.BCEWithLogitsLoss()

for epoch in range(4):
    for xb, yb in zip(X.split(40), y.split(40), strict=True):
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)  # doctor: probabilities_into_logits_loss
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
