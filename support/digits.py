"""The digits models of issue 28, twice: as the spec a session is created with and as the plain
PyTorch layers the same spec must build (the oracle of tests/web/test_models.py and the
baseline of bench/models.py)."""

from __future__ import annotations

from typing import Any

from torch import nn

DIGITS: dict[str, Any] = {"kind": "sklearn", "name": "load_digits", "args": {}}
MLP: list[dict[str, Any]] = [
    {"type": "Linear", "out_features": 128},
    {"type": "ReLU"},
    {"type": "Linear", "out_features": 64},
    {"type": "ReLU"},
    {"type": "Linear", "out_features": 10},
]
CNN: list[dict[str, Any]] = [
    {"type": "Unflatten", "dim": 1, "unflattened_size": [1, 8, 8]},
    {"type": "Conv2d", "out_channels": 8, "kernel_size": 3},
    {"type": "ReLU"},
    {"type": "MaxPool2d", "kernel_size": 2},
    {"type": "Flatten"},
    {"type": "Linear", "out_features": 10},
]


def mlp() -> list[nn.Module]:
    """``MLP`` as plain layers (64 features in)."""
    return [nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)]


def cnn() -> list[nn.Module]:
    """``CNN`` as plain layers (8 x 8 images in)."""
    return [
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 8, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(72, 10),
    ]
