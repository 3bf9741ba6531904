# zero_grad() on rank 0 only: rank 1 adds every iteration's gradient to the last, and DDP
# averages that sum into both ranks' gradients (the weights stay equal, both wrong)
# mypy: ignore-errors
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
torch.manual_seed(0)
X = torch.randn(128, 8)
y = (X[:, 0] > 0).long()
dataset = TensorDataset(X, y)
sampler = DistributedSampler(dataset, shuffle=True)
loader = DataLoader(dataset, batch_size=16, sampler=sampler)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        if dist.get_rank() == 0:
            optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()  # doctor: skip_zero_grad ranks=1
        optimizer.step()
dist.destroy_process_group()
