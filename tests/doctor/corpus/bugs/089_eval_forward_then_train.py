# From: wolny/pytorch-3dunet#53: eval() for validation, train() back only at the training loss
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(89)
model = nn.Sequential(
    nn.Linear(16, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 3)
)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(256, 16), torch.randint(0, 3, (256,))
X_val, y_val = torch.randn(64, 16), torch.randint(0, 3, (64,))

for epoch in range(2):
    for i in range(0, 256, 32):
        model.eval()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(X_val), y_val)
        output = model(X[i : i + 32])
        model.train()
        loss = F.cross_entropy(output, y[i : i + 32])
        optimizer.zero_grad()
        loss.backward()  # doctor: eval_while_training
        optimizer.step()
    print(epoch, loss.item(), val_loss.item())
