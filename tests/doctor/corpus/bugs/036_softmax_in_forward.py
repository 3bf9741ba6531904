# From: a GitHub issue: 'accuracy stuck near chance' (forward() returns softmax, cross_entropy)
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.relu(self.conv(x)), 2)
        return torch.softmax(self.fc(h.flatten(1)), dim=-1)


def compute_loss(model, images, labels):
    probs = model(images)
    return F.cross_entropy(probs, labels)  # doctor: softmax_before_loss


torch.manual_seed(35)
images = torch.randn(96, 1, 8, 8)
labels = torch.randint(0, 10, (96,))
loader = DataLoader(TensorDataset(images, labels), batch_size=16, shuffle=True)
model = ConvNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = compute_loss(model, xb, yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
