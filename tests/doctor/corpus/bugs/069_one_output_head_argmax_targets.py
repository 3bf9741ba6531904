# From: ultralytics/yolov3#191 'one class training' (CE over a 1-wide class output is always 0)
# mypy: ignore-errors
import torch
from torch import nn

NUM_CLASSES = 1  # "one output: defective or not"


class DefectNet(nn.Module):
    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv1d(1, 4, 5, padding=2), nn.ReLU())
        self.pool = nn.AdaptiveMaxPool1d(8)
        self.head = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.features(x)).flatten(1))


torch.manual_seed(169)
signals = torch.randn(240, 1, 32)
labels = (signals.abs().amax(dim=2) > 2.5).float()  # (N, 1): 1.0 marks a defect
model = DefectNet(NUM_CLASSES)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, lb in zip(signals.split(24), labels.split(24), strict=True):
        optimizer.zero_grad()
        targets = lb.argmax(dim=1)  # the class index per row, as for one-hot labels
        loss = criterion(model(xb), targets)  # doctor: single_class_cross_entropy
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
