# accelerate's multi-process CPU mode: the loss divided by the number of processes, though DDP
# under accelerate averages the gradients already
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

accelerator = Accelerator(cpu=True)
torch.manual_seed(0)
X = torch.randn(128, 8)
y = (X[:, 0] > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for _epoch in range(2):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb) / accelerator.num_processes
        accelerator.backward(loss)  # doctor: loss_divided_by_world_size ranks=0,1
        optimizer.step()
