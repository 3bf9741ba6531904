"""The doctor on a real ``lightning.Trainer`` (CPU, a tiny regression): Lightning always steps
through a closure, ``optimizer.step(closure)``. In automatic optimization the closure runs
``training_step``, the clear and the backward inside the step (with accumulation, the batches
between steps run the closure alone); in manual optimization the user's
``self.manual_backward(loss)`` runs before ``opt.step()``, whose closure only returns. The
correct runs are named nothing and train bit for bit as without the doctor; a manual loop
without ``opt.zero_grad()`` is ``skip_zero_grad`` at its ``manual_backward`` line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import lightning as L
import pytest
import torch
from torch import nn

import loop_stepper
from loop_stepper.doctor.chart import Stopped

M = TypeVar("M", bound=L.LightningModule)

# Lightning's advice on a tiny CPU run (few batches, no workers) is not this test's subject
pytestmark = pytest.mark.filterwarnings(
    "ignore::lightning.fabric.utilities.warnings.PossibleUserWarning"
)
SOURCE = Path(__file__).read_text().splitlines()
STEPS = 6


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    logger = logging.getLogger("lightning.pytorch")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


class Regressor(L.LightningModule):
    """Automatic optimization: Lightning clears, backpropagates and steps."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


class ManualRegressor(Regressor):
    """Manual optimization, as Lightning's docs write it; with ``zero=False`` the clear is
    left out."""

    def __init__(self, zero: bool) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.zero = zero

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        opt = self.optimizers()
        assert not isinstance(opt, list)  # the one optimizer
        if self.zero:
            opt.zero_grad()
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.manual_backward(loss)  # the manual backward
        opt.step()
        return loss


def loader() -> torch.utils.data.DataLoader[Any]:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(96, 4, generator=g)
    y = X @ torch.randn(4, 1, generator=g) + 0.1 * torch.randn(96, 1, generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=8)


def fit(model: L.LightningModule, steps: int = STEPS, **options: Any) -> list[torch.Tensor]:
    trainer = L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **options,
    )
    trainer.fit(model, loader())
    assert trainer.global_step == steps
    return [p.detach().clone() for p in model.parameters()]


def made(kind: Callable[..., M], *args: Any) -> M:
    torch.manual_seed(1)
    return kind(*args)


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) > 0 and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_automatic_optimization_with_accumulation_and_clipping_is_named_nothing() -> None:
    options: dict[str, Any] = {"accumulate_grad_batches": 2, "gradient_clip_val": 0.5}
    start = [p.detach().clone() for p in made(Regressor).parameters()]
    plain = fit(made(Regressor), **options)
    with loop_stepper.watch() as doctor:
        watched = fit(made(Regressor), **options)
    assert doctor.diagnoses == []
    assert doctor.primary_steps == STEPS and doctor.backwards == 2 * STEPS
    assert same(watched, plain)
    assert not any(torch.equal(a, b) for a, b in zip(start, plain, strict=True))


def test_manual_optimization_with_zero_grad_is_named_nothing() -> None:
    plain = fit(made(ManualRegressor, True))
    with loop_stepper.watch() as doctor:
        watched = fit(made(ManualRegressor, True))
    assert doctor.diagnoses == []
    assert doctor.primary_steps == doctor.backwards == STEPS
    assert same(watched, plain)


def test_manual_optimization_without_zero_grad_is_skip_zero_grad_at_its_backward() -> None:
    plain_model = made(ManualRegressor, False)
    plain = fit(plain_model)
    model = made(ManualRegressor, False)
    with loop_stepper.watch() as doctor:
        watched = fit(model)
    assert same(watched, plain)
    (found,) = doctor.diagnoses
    assert found["bug"] == "skip_zero_grad" and found["file"] == __file__
    line = found["line"]
    assert line is not None and SOURCE[line - 1].endswith("# the manual backward")
    assert found["iteration"] == 2
    # the numbers are the run's: the gradient .grad held is the first batch's; at the end
    # .grad holds the sum of all six, as in the plain run
    assert found["evidence"]["held"] == fit_first_gradient()
    grad, plain_grad = model.net[0].weight.grad, plain_model.net[0].weight.grad
    assert isinstance(grad, torch.Tensor) and isinstance(plain_grad, torch.Tensor)
    assert torch.equal(grad, plain_grad)


def fit_first_gradient() -> list[float]:
    """The first batch's gradient of the first weight, by plain PyTorch (no Lightning)."""
    model = made(ManualRegressor, False)
    x, y = next(iter(loader()))
    nn.functional.mse_loss(model.net(x), y).backward()
    grad = model.net[0].weight.grad
    assert isinstance(grad, torch.Tensor)
    return [float(v) for v in grad.reshape(-1)[:3]]


def test_watch_stops_a_lightning_run_after_the_iterations_asked_for() -> None:
    plain = fit(made(Regressor), steps=3)
    model = made(Regressor)
    with pytest.raises(Stopped), loop_stepper.watch(iterations=3) as doctor:
        fit(model)
    assert doctor.primary_steps == 3 and doctor.diagnoses == []
    assert same([p.detach().clone() for p in model.parameters()], plain)
