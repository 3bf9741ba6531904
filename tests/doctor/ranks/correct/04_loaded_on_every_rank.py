# Correct: rank 0 saves a checkpoint, every rank loads it with map_location after a barrier
# mypy: ignore-errors
import os
import tempfile

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
path = os.path.join(tempfile.gettempdir(), f"ckpt-{os.environ['MASTER_PORT']}.pt")
if dist.get_rank() == 0:
    torch.save({k: v + 1 for k, v in model.state_dict().items()}, path)
dist.barrier()
model.load_state_dict(torch.load(path, map_location="cpu"))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
dist.destroy_process_group()
