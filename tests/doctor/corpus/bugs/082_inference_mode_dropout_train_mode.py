# From: udacity/deep-learning-v2-pytorch#3: a dropout MLP class validated without model.eval()
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.fc2 = nn.Linear(64, 32)
        self.fc3 = nn.Linear(32, 4)
        self.dropout = nn.Dropout(p=0.3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.dropout(F.relu(self.fc1(x)))
        x = self.dropout(F.relu(self.fc2(x)))
        return self.fc3(x)


torch.manual_seed(82)
X = torch.randn(300, 20)
y = (X[:, :4] + 0.3 * torch.randn(300, 4)).argmax(dim=1)
X_train, y_train, X_val, y_val = X[:240], y[:240], X[240:], y[240:]

model = Classifier()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    order = torch.randperm(240)
    for start in range(0, 240, 30):
        idx = order[start : start + 30]
        optimizer.zero_grad()
        loss = criterion(model(X_train[idx]), y_train[idx])
        loss.backward()
        optimizer.step()
    with torch.inference_mode():
        val_losses = []
        for _ in range(2):  # the same validation set twice
            val_out = model(X_val)  # doctor: validation_in_train_mode
            val_losses.append(criterion(val_out, y_val).item())
    print(epoch, loss.item(), "validation loss, twice:", val_losses)
