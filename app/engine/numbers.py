"""Tensors as JSON: exact float values, with non-finite ones spelled as strings.

JSON has no NaN or Infinity, and a student who makes training diverge must still get
a valid response, so those become "NaN", "Infinity" and "-Infinity".
"""

from __future__ import annotations

import math
from typing import Any

import torch

Number = float | str


def number(x: float) -> Number:
    if math.isfinite(x):
        return x
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def _fix(value: Any) -> Any:
    if isinstance(value, list):
        return [_fix(v) for v in value]
    return number(value)


def nested(t: torch.Tensor) -> Any:
    """The tensor as nested lists in its shape (a plain number for 0-d)."""
    value = t.detach().tolist()
    # the common case is all finite: skip the per-element walk then
    return value if bool(torch.isfinite(t).all()) else _fix(value)
