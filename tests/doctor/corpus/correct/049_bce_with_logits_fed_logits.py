# Correct: yudi-mars/daisyRec#15's fix: forward() returns the raw score to BCEWithLogitsLoss
# mypy: ignore-errors
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MatrixFactorization(nn.Module):
    def __init__(self, n_users: int, n_items: int, dim: int = 8) -> None:
        super().__init__()
        self.users = nn.Embedding(n_users, dim)
        self.items = nn.Embedding(n_items, dim)

    def forward(self, user: torch.Tensor, item: torch.Tensor) -> torch.Tensor:
        score = (self.users(user) * self.items(item)).sum(dim=1)
        return score  # a logit: BCEWithLogitsLoss applies the sigmoid itself


torch.manual_seed(162)
n_users, n_items = 30, 40
taste, traits = torch.randn(n_users, 4), torch.randn(n_items, 4)
user = torch.randint(0, n_users, (480,))
item = torch.randint(0, n_items, (480,))
clicked = ((taste[user] * traits[item]).sum(dim=1) > 0).float()
loader = DataLoader(TensorDataset(user, item, clicked), batch_size=48, shuffle=True)
model = MatrixFactorization(n_users, n_items)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
criterion = nn.BCEWithLogitsLoss()

for epoch in range(3):
    for u, i, c in loader:
        optimizer.zero_grad()
        loss = criterion(model(u, i), c)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
