"""What one rank reads from its own numbers (``doctor/ranks.py``), without a job: which loss is
divided by the world size, and a parameter's fingerprint."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from loop_stepper.doctor.ranks import _divided_by, fingerprint

W = torch.randn(3, requires_grad=True)
LOSS, AUX = (W**2).mean(), (W**3).mean()

CASES: dict[str, tuple[Callable[[], torch.Tensor], int, bool]] = {
    "loss / 2": (lambda: LOSS / 2, 2, True),
    "loss / 2 / 1 (accelerate's gradient_accumulation_steps)": (lambda: LOSS / 2 / 1, 2, True),
    "loss * 0.25, four ranks": (lambda: LOSS * 0.25, 4, True),
    "(loss + aux) / 4, four ranks": (lambda: (LOSS + AUX) / 4, 4, True),
    "0.5 * loss, two ranks: a coefficient as often": (lambda: 0.5 * LOSS, 2, False),
    "(loss + aux) / 2, two ranks: the mean of two terms": (lambda: (LOSS + AUX) / 2, 2, False),
    "loss / 3, two ranks": (lambda: LOSS / 3, 2, False),
    "loss": (lambda: LOSS, 2, False),
}


@pytest.mark.parametrize("case", CASES)
def test_a_loss_divided_by_the_world_size(case: str) -> None:
    make, world, divided = CASES[case]
    assert _divided_by(make(), world) is divided


def test_a_fingerprint_tells_a_moved_parameter_from_its_copy() -> None:
    torch.manual_seed(0)
    p = torch.randn(300, 300)  # 90,000 elements: 4,096 of them strided, and the sum
    assert fingerprint(p) == fingerprint(p.clone())
    moved = p.clone()
    moved -= 0.01 * torch.randn_like(p)  # a step of its own
    assert fingerprint(moved) != fingerprint(p)
    one = p.clone()
    one[7, 11] += 1.0  # one element off the stride: the sum tells
    assert fingerprint(one) != fingerprint(p)
    assert fingerprint(torch.arange(10)) == fingerprint(torch.arange(10))  # any dtype
