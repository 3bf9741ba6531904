# Source: phlippe/uvadlc_notebooks, docs/tutorial_notebooks/tutorial2/Introduction_to_PyTorch.ipynb (Introduction to PyTorch) — rebuilt small in our own words  # noqa: E501
"""The UvA course's continuous XOR: a ``data.Dataset`` subclass whose ``__getitem__`` (an
earlier cell's code, run once per example) feeds a shuffled ``DataLoader`` of batch 128, a
two-layer ``SimpleClassifier``, ``BCEWithLogitsLoss`` on squeezed logits, and
``train_model(model, optimizer, data_loader, loss_module, num_epochs)``, an earlier cell's
loop under ``model.train()``, which the cell calls."""

SETUP: tuple[str, ...] = (
    """\
import torch
import torch.nn as nn
import torch.utils.data as data

NUM_WORKERS = 0
torch.manual_seed(42)
device = torch.device("cpu")
""",
    """\
class SimpleClassifier(nn.Module):
    def __init__(self, num_inputs, num_hidden, num_outputs):
        super().__init__()
        self.linear1 = nn.Linear(num_inputs, num_hidden)
        self.act_fn = nn.Tanh()
        self.linear2 = nn.Linear(num_hidden, num_outputs)

    def forward(self, x):
        return self.linear2(self.act_fn(self.linear1(x)))
""",
    """\
class XORDataset(data.Dataset):
    def __init__(self, size, std=0.1):
        super().__init__()
        self.size = size
        self.std = std
        self.generate_continuous_xor()

    def generate_continuous_xor(self):
        # corners of the unit square, label 1 where exactly one coordinate is 1, then noise
        corners = torch.randint(low=0, high=2, size=(self.size, 2), dtype=torch.float32)
        self.label = (corners.sum(dim=1) == 1).to(torch.long)
        self.data = corners + self.std * torch.randn(corners.shape)

    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        return self.data[idx], self.label[idx]


train_dataset = XORDataset(size=2500)
train_data_loader = data.DataLoader(
    train_dataset, batch_size=128, shuffle=True, num_workers=NUM_WORKERS
)
print("Size of dataset:", len(train_dataset), "first:", train_dataset[0])
""",
    """\
model = SimpleClassifier(num_inputs=2, num_hidden=4, num_outputs=1)
loss_module = nn.BCEWithLogitsLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_model(model, optimizer, data_loader, loss_module, num_epochs=100):
    model.train()
    for epoch in range(num_epochs):
        total = 0.0
        for data_inputs, data_labels in data_loader:
            data_inputs = data_inputs.to(device)
            data_labels = data_labels.to(device)

            preds = model(data_inputs)
            preds = preds.squeeze(dim=1)  # (batch, 1) -> (batch,)
            loss = loss_module(preds, data_labels.float())

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch + 1}: mean loss {total / len(data_loader):.4f}")
""",
)

CELL: str = """\
train_model(model, optimizer, train_data_loader, loss_module, num_epochs=5)
"""
