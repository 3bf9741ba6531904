# From: Stack Overflow question: 'encoder weights do not change' (a .detach() inside forward)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class EncoderClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
        self.classifier = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.encoder(x)
        features = features.detach()  # "to save memory"
        return self.classifier(features)


torch.manual_seed(24)
X = torch.randn(192, 16)
y = torch.randint(0, 3, (192,))
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
model = EncoderClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()  # doctor: no_gradient
        optimizer.step()
    print(epoch, loss.item())
