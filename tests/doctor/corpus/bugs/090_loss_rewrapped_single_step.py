# From: huggingface/torchMoji#21: outputs.data, the loss re-wrapped with requires_grad=True
# mypy: ignore-errors
import torch
from torch import nn
from torch.autograd import Variable

torch.manual_seed(90)
model = nn.Sequential(nn.Embedding(50, 16), nn.Flatten(), nn.Linear(16 * 6, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
tokens, labels = torch.randint(0, 50, (32, 6)), torch.randint(0, 4, (32,))

outputs = model(tokens).data
loss = criterion(outputs, labels)
loss = Variable(loss, requires_grad=True)  # doctor: no_gradient
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("one step:", loss.item())
