"""The lesson's models and data: what a Lab trains.

A scenario builds the live pieces (model, loss function, data) and picks their batch order
(``batches.py``). It knows nothing of the loop lines; ``lab.py`` runs those.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch
from torch import nn

from app.spec.batches import Epochs, FullBatch
from app.spec.built import Built, fresh_copy
from app.torchlock import TORCH_LOCK


@dataclass(frozen=True)
class ScenarioInfo:
    name: str
    title: str  # a few words for a menu
    description: str
    default_lr: float
    default_seed: int
    batch_size: int
    train_size: int
    accumulate: tuple[int, ...]  # the micro-batch counts that divide its batch


# -- neuron: the worked example -------------------------------------------------

NEURON_X = ((1.0,), (2.0,), (3.0,), (4.0,))
NEURON_Y = ((2.0,), (3.0,), (5.0,), (6.0,))


@lru_cache(maxsize=1)
def neuron_template() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    x, y = torch.tensor(NEURON_X), torch.tensor(NEURON_Y)
    with TORCH_LOCK:  # nn.Linear draws its initial weights from torch's default generator
        model = nn.Linear(1, 1)
    with torch.no_grad():  # start at (w, b) = (0, 0)
        model.weight.zero_()
        model.bias.zero_()
    return model, x, y


def build_neuron(seed: int, **_: float) -> Built:
    del seed  # the worked example is deterministic: w = b = 0
    template, x, y = neuron_template()
    return Built(fresh_copy(template), nn.MSELoss(), FullBatch(x, y), x, y)


# -- moons: the 2-16-16-2 network of DL01.5.4 ----------------------------------

MOONS_BATCH = 32


@lru_cache(maxsize=16)  # data are read-only and shared by every session with that seed
def moons_data(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import make_moons
    from sklearn.model_selection import train_test_split

    x, labels = make_moons(n_samples=200, noise=0.2, random_state=seed)
    x_train, _, y_train, _ = train_test_split(
        x, labels, test_size=0.25, stratify=labels, random_state=seed
    )
    return torch.tensor(x_train), torch.tensor(y_train)


DTYPES = {"float64": torch.float64, "float32": torch.float32}


def moons_layers(dropout: float = 0.0, batchnorm: bool = False) -> list[nn.Module]:
    """2-16-16-2: BatchNorm1d after each hidden Linear (before its ReLU), Dropout(p) after
    each hidden ReLU; p = 0 adds no layer. Only the Linears draw from torch's generator."""
    layers: list[nn.Module] = []
    for n_in in (2, 16):
        layers.append(nn.Linear(n_in, 16))
        if batchnorm:
            layers.append(nn.BatchNorm1d(16))
        layers.append(nn.ReLU())
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(16, 2))
    return layers


def moons_options(
    scenario: str, dropout: float, batchnorm: bool, softmax: bool, dtype: str
) -> dict[str, Any]:
    """The moons model's options for ``build`` ({} when all are the defaults); a non-default
    one on another scenario is a ValueError (softmax changes the loss line, not the model)."""
    if (dropout, batchnorm, softmax, dtype) == (0.0, False, False, "float64"):
        return {}
    if scenario != "moons":
        raise ValueError("dropout, batchnorm, softmax_before_loss, dtype: moons only")
    return {"dropout": dropout, "batchnorm": batchnorm, "dtype": dtype}


@lru_cache(maxsize=64)  # a pure function of its arguments, read-only: see fresh_copy
def moons_template(
    seed: int, dropout: float, batchnorm: bool, dtype: str
) -> tuple[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The seeded model as the lesson builds it, its data in its dtype, and torch's generator
    right after the build (dropout draws on from there)."""
    x, y = moons_data(seed)
    kind = DTYPES[dtype]
    x = x.to(kind)
    with TORCH_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # right before the model is built, as the lesson does
        model = nn.Sequential(*moons_layers(dropout, batchnorm)).to(kind)
        rng = torch.get_rng_state()
    return model, rng, x, y


def build_moons(
    seed: int, dropout: float = 0.0, batchnorm: bool = False, dtype: str = "float64", **_: float
) -> Built:
    template, rng, x, y = moons_template(seed, float(dropout), bool(batchnorm), dtype)
    model = fresh_copy(template)
    return Built(model, nn.CrossEntropyLoss(), Epochs(x, y, seed, MOONS_BATCH), x, y, rng.clone())


# -- parabola: the oscillation theory of "The formal statement" ----------------

PARABOLA_CURVATURE = 15.0
PARABOLA_TARGET = 1.4


class Parabola(nn.Module):
    """One parameter; the model's output is theta itself."""

    def __init__(self) -> None:
        super().__init__()
        self.theta = nn.Parameter(torch.zeros(1, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.theta


class HalfCurvatureLoss(nn.Module):
    """L = h/2 * (out - y)^2: a parabola of curvature h with its minimum at y."""

    def __init__(self, curvature: float) -> None:
        super().__init__()
        self.curvature = curvature

    def forward(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.curvature / 2 * ((out - y) ** 2).sum()


def build_parabola(
    seed: int, curvature: float = PARABOLA_CURVATURE, theta_star: float = PARABOLA_TARGET
) -> Built:
    del seed
    x = torch.ones(1, dtype=torch.float64)
    y = torch.tensor([theta_star], dtype=torch.float64)
    loss_fn = HalfCurvatureLoss(curvature)
    return Built(Parabola(), loss_fn, FullBatch(x, y), x.reshape(1, 1), y)


# -- registry -------------------------------------------------------------------

SCENARIOS: dict[str, tuple[ScenarioInfo, Callable[..., Built]]] = {
    "neuron": (
        ScenarioInfo(
            "neuron",
            "the worked example",
            "The worked example: nn.Linear(1, 1) from w = b = 0 on x = (1, 2, 3, 4), "
            "y = (2, 3, 5, 6), MSE loss, SGD, full batch.",
            default_lr=0.05,
            default_seed=0,
            batch_size=4,
            train_size=4,
            accumulate=(1, 2, 4),
        ),
        build_neuron,
    ),
    "moons": (
        ScenarioInfo(
            "moons",
            "2-16-16-2 network",
            "make_moons: a 2-16-16-2 ReLU network in float64, cross-entropy loss, SGD, "
            "150 training points in batches of 32 (the last of an epoch 22).",
            default_lr=0.3,
            default_seed=0,
            batch_size=MOONS_BATCH,
            train_size=150,
            accumulate=(1, 2, 4, 8),
        ),
        build_moons,
    ),
    "parabola": (
        ScenarioInfo(
            "parabola",
            "one parameter θ",
            "One parameter theta from 0 on the loss h/2 * (theta - theta*)^2 (h = 15, "
            "theta* = 1.4 unless set), SGD: without zero_grad it swings for ever.",
            default_lr=0.05,
            default_seed=0,
            batch_size=1,
            train_size=1,
            accumulate=(1,),
        ),
        build_parabola,
    ),
}


def build(name: str, seed: int, **options: Any) -> Built:
    """The scenario's pieces; ``options`` are the parabola's ``curvature`` and ``theta_star``,
    or moons' ``dropout``, ``batchnorm`` and ``dtype``."""
    return SCENARIOS[name][1](seed, **options)


def info(name: str) -> ScenarioInfo:
    return SCENARIOS[name][0]
