# Source: d2l-ai/d2l-en, chapter_multilayer-perceptrons/dropout.md (Dropout, concise implementation) — rebuilt small in our own words  # noqa: E501
"""d2l's concise dropout MLP: a ``d2l.Classifier`` whose ``net`` is an ``nn.Sequential`` of
``Flatten``, ``LazyLinear`` (shapes unknown, parameters made at the first forward, which is
the first training step: after the optimizer took them), ``ReLU`` and ``Dropout``. The cell
only builds the model and a ``d2l.Trainer`` and calls ``fit``: the loop lives in the library,
and calls back into the model's ``training_step`` and ``loss``."""

SETUP: tuple[str, ...] = (
    """\
import torch
from torch import nn

import d2l_small as d2l

NUM_WORKERS = 0
torch.manual_seed(0)
""",
    """\
class DropoutMLP(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2, dropout_1, dropout_2, lr):
        super().__init__()
        self.save_hyperparameters()  # every argument becomes an attribute
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.LazyLinear(num_hiddens_1),
            nn.ReLU(),
            nn.Dropout(dropout_1),
            nn.LazyLinear(num_hiddens_2),
            nn.ReLU(),
            nn.Dropout(dropout_2),
            nn.LazyLinear(num_outputs),
        )
""",
    """\
hparams = {
    "num_outputs": 10,
    "num_hiddens_1": 256,
    "num_hiddens_2": 256,
    "dropout_1": 0.5,
    "dropout_2": 0.5,
    "lr": 0.1,
}
data = d2l.FashionMNIST(batch_size=128, num_train=512, num_workers=NUM_WORKERS)
""",
)

CELL: str = """\
model = DropoutMLP(**hparams)
trainer = d2l.Trainer(max_epochs=3)
trainer.fit(model, data)
"""
