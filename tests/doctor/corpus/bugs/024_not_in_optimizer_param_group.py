# From: a GitHub issue: 'biases never update' (a no-decay parameter group built but not passed)
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


torch.manual_seed(23)
X = torch.randn(160, 10)
y = torch.randint(0, 2, (160,))
loader = DataLoader(TensorDataset(X, y), batch_size=20, shuffle=True)
model = Model()

decay, no_decay = [], []
for name, param in model.named_parameters():
    (no_decay if name.endswith("bias") or "norm" in name else decay).append(param)
param_groups = [{"params": decay, "weight_decay": 0.01}]
no_decay_group = {"params": no_decay, "weight_decay": 0.0}
optimizer = torch.optim.AdamW(param_groups, lr=1e-3)  # doctor: not_in_optimizer
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
