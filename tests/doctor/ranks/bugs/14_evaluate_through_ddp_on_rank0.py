# evaluation through the DDP wrapper on rank 0 only: its forward broadcasts the BatchNorm
# buffers from rank 0, a collective rank 1 never runs (it waits at the barrier)
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
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    if dist.get_rank() == 0:
        model.eval()
        with torch.no_grad():
            out = model(X)  # doctor: collective_hang ranks=0
        accuracy = (out.argmax(1) == y).float().mean().item()
dist.barrier()  # doctor: collective_hang ranks=1
dist.destroy_process_group()
