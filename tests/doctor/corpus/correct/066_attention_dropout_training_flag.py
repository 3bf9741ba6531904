# Correct: attention weights dropped with training=self.training, none dropped after model.eval()
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class AttentionPooling(nn.Module):
    def __init__(self, dim, classes, p=0.2):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.classify = nn.Linear(dim, classes)
        self.p = p

    def forward(self, fields):
        weights = F.softmax(self.score(fields), dim=1)
        weights = F.dropout(weights, p=self.p, training=self.training)
        return self.classify((weights * fields).sum(dim=1))


torch.manual_seed(79)
fields = torch.randn(240, 6, 4)  # 6 fields of 4 features each
labels = (fields[:, 0, 0] + fields[:, 3, 1] > 0).long()
loader = DataLoader(TensorDataset(fields[:192], labels[:192]), batch_size=12, shuffle=True)

model = AttentionPooling(dim=4, classes=2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()

for epoch in range(2):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())

model.eval()
with torch.no_grad():
    for run in range(2):
        predictions = model(fields[192:]).argmax(dim=1)
        print("run", run, "accuracy", (predictions == labels[192:]).float().mean().item())
