# Correct: knowledge distillation, a teacher with dropout kept in eval() and run under no_grad
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(124)
X = torch.randn(192, 10)
y = torch.randint(0, 4, (192,))
loader = DataLoader(TensorDataset(X, y), batch_size=24, shuffle=True)
teacher = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 4))
student = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 4))
teacher.eval()
optimizer = torch.optim.Adam(student.parameters(), lr=1e-3)
T = 2.0

for epoch in range(3):
    student.train()
    for xb, yb in loader:
        with torch.no_grad():
            soft_targets = F.softmax(teacher(xb) / T, dim=1)
        optimizer.zero_grad()
        logits = student(xb)
        log_probs = F.log_softmax(logits / T, dim=1)
        kd = F.kl_div(log_probs, soft_targets, reduction="batchmean") * T * T
        loss = kd + F.cross_entropy(logits, yb)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
