# model.eval() on rank 0 at an epoch's end and no model.train() at the next: rank 0 trains
# the second epoch in eval mode (no dropout) while rank 1 trains with it
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
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 2)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    if dist.get_rank() == 0:
        model.eval()  # doctor: ranks_modes_differ ranks=0
        with torch.no_grad():
            accuracy = (model.module(X).argmax(1) == y).float().mean().item()
    dist.barrier()
dist.destroy_process_group()
