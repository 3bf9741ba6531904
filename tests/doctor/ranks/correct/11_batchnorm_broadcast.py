# correct: DDP's default broadcast_buffers=True, so each forward starts from rank 0's running
# statistics (SyncBatchNorm, the other fix, needs GPUs); rank 0 saves them
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
net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
model = DDP(net)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
if dist.get_rank() == 0:
    torch.save(model.module.state_dict(), "model.pt")
dist.barrier()
dist.destroy_process_group()
