# From: keras-team/keras-io#257: 'Knowledge Distillation Typo' (teacher and student swapped)
# mypy: ignore-errors
import torch
import torch.nn.functional as F
from torch import nn


class Distiller(nn.Module):
    def __init__(self, student, teacher):
        super().__init__()
        self.teacher = student
        self.student = teacher

    def loss(self, x, y, temperature=3.0, alpha=0.1):
        with torch.no_grad():
            teacher_logits = self.teacher(x)
        student_logits = self.student(x)
        hard = F.cross_entropy(student_logits, y)
        soft = F.kl_div(
            F.log_softmax(student_logits / temperature, dim=1),
            F.softmax(teacher_logits / temperature, dim=1),
            reduction="batchmean",
        )
        return alpha * hard + (1 - alpha) * soft * temperature**2


torch.manual_seed(85)
X = torch.randn(256, 20)
y = (X[:, :3].sum(dim=1) > 0).long()
teacher = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
student = nn.Sequential(nn.Linear(20, 8), nn.ReLU(), nn.Linear(8, 2))
distiller = Distiller(student=student, teacher=teacher)
optimizer = torch.optim.Adam(student.parameters(), lr=1e-3)  # doctor: optimizer_wrong_model

for epoch in range(2):
    for i in range(0, 256, 32):
        loss = distiller.loss(X[i : i + 32], y[i : i + 32])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
