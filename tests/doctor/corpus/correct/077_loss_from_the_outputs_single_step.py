# Correct: the loss from the model's outputs, no .data, no re-wrap: one step
# mypy: ignore-errors
import torch
from torch import nn

torch.manual_seed(90)
model = nn.Sequential(nn.Embedding(50, 16), nn.Flatten(), nn.Linear(16 * 6, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
tokens, labels = torch.randint(0, 50, (32, 6)), torch.randint(0, 4, (32,))

outputs = model(tokens)
loss = criterion(outputs, labels)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("one step:", loss.item())
