# Correct: PyTorch-YOLOv3#108's fix: the raw class scores go to nn.CrossEntropyLoss
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class ClassHead(nn.Module):
    def __init__(self, channels: int, num_classes: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(channels, 32), nn.LeakyReLU(0.1))
        self.cls = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cls(self.body(x))


torch.manual_seed(165)
features = torch.randn(320, 16)
tcls = nn.functional.one_hot(features[:, :6].argmax(dim=1), 6).float()  # one-hot targets
loader = DataLoader(TensorDataset(features, tcls), batch_size=32, shuffle=True)
model = ClassHead(16, 6)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
ce_loss = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, tb in loader:
        optimizer.zero_grad()
        pred_cls = model(xb)
        loss = ce_loss(pred_cls, tb.argmax(dim=1))
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
