from __future__ import annotations

import torch

from app.engine.numbers import nested, number


def test_exact_values_in_shape() -> None:
    t = torch.tensor([[1.175, -8.0]], dtype=torch.float32)
    assert nested(t) == [[t[0, 0].item(), -8.0]]
    assert nested(torch.tensor(2.5)) == 2.5


def test_non_finite_become_strings() -> None:
    t = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    assert nested(t) == ["NaN", "Infinity", "-Infinity", 1.0]
    assert number(float("nan")) == "NaN" and number(3.0) == 3.0
