"""``log_tensor`` on a real ``lightning.Trainer``: the LightningModule that keeps every step's
loss (``self.losses.append(loss)``) is held by the trainer, not by a name of the user's; the
doctor meets it as the ``self`` that made the optimizer (``configure_optimizers``) and names
the append at its line. Kept detached, nothing is named; the weights are the plain run's bit
for bit either way."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from torch import nn

import loop_stepper

pytestmark = pytest.mark.filterwarnings(
    "ignore::lightning.fabric.utilities.warnings.PossibleUserWarning"
)
SOURCE = Path(__file__).read_text().splitlines()


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    logger = logging.getLogger("lightning.pytorch")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


class Keeping(L.LightningModule):
    """Automatic optimization that keeps each step's loss (``detached``: as a tensor without
    its graph)."""

    def __init__(self, detached: bool) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        self.detached = detached
        self.losses: list[torch.Tensor] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.losses.append(loss.detach() if self.detached else loss)  # the losses kept
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def fit(detached: bool, watched: bool) -> tuple[list[Any], list[torch.Tensor]]:
    torch.manual_seed(2)
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(64, 4, generator=g), torch.randn(64, 1, generator=g)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=8)
    trainer = L.Trainer(
        max_steps=8,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    if watched:  # the module made in the call, as the docs write it: no name of ours holds it
        with loop_stepper.watch() as doctor:
            trainer.fit(Keeping(detached), data)
        diagnoses: list[Any] = doctor.diagnoses
    else:
        trainer.fit(Keeping(detached), data)
        diagnoses = []
    model = trainer.lightning_module
    assert isinstance(model, Keeping) and len(model.losses) == 8
    return diagnoses, [p.detach().clone() for p in model.parameters()]


def test_a_lightning_module_keeping_its_losses_is_named_at_the_append() -> None:
    diagnoses, watched = fit(detached=False, watched=True)
    _, plain = fit(detached=False, watched=False)
    assert all(torch.equal(a, b) for a, b in zip(plain, watched, strict=True))
    (found,) = diagnoses
    assert found["bug"] == "log_tensor" and found["file"] == __file__
    assert SOURCE[found["line"] - 1].strip().endswith("# the losses kept")
    assert found["evidence"]["name"] == "self.losses"
    assert found["evidence"]["graphs"] == 2 and found["iteration"] == 3


def test_a_lightning_module_keeping_detached_losses_is_named_nothing() -> None:
    diagnoses, watched = fit(detached=True, watched=True)
    _, plain = fit(detached=True, watched=False)
    assert all(torch.equal(a, b) for a, b in zip(plain, watched, strict=True))
    assert diagnoses == []
