# Correct: the transfer-learning tutorial's loop, train and val phases under torch.set_grad_enabled
# mypy: ignore-errors
import torch
from torch import nn
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(128)
X = torch.randn(240, 10)
y = torch.randint(0, 2, (240,))
loaders = {
    "train": DataLoader(TensorDataset(X[:192], y[:192]), batch_size=32, shuffle=True),
    "val": DataLoader(TensorDataset(X[192:], y[192:]), batch_size=48),
}
model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)

for epoch in range(4):
    for phase in ["train", "val"]:
        if phase == "train":
            model.train()
        else:
            model.eval()
        running_loss = 0.0
        for inputs, labels in loaders[phase]:
            optimizer.zero_grad()
            with torch.set_grad_enabled(phase == "train"):
                outputs = model(inputs)
                loss = criterion(outputs, labels)
                if phase == "train":
                    loss.backward()
                    optimizer.step()
            running_loss += loss.item() * inputs.size(0)
        if phase == "train":
            scheduler.step()
        print(epoch, phase, running_loss / len(loaders[phase].dataset))
