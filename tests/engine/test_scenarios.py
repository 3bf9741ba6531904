"""Accumulating on purpose: k micro-batches, each loss / k, give the full-batch gradient."""

from __future__ import annotations

import pytest
import torch

from app.engine import Lab
from app.engine.optimizers import PLAIN_SGD
from app.engine.setup import Setup


def grads_after_one_step(lab: Lab) -> list[torch.Tensor]:
    while lab.next_line != "step":
        lab.next()
    return [p.grad.clone() for p in lab.named.values() if p.grad is not None]


@pytest.mark.parametrize("k", [2, 4])
def test_neuron_halves_add_to_the_full_batch_gradient(k: int) -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, accumulate=k))
    assert lab.program == ["zero_grad", *["forward", "loss", "backward"] * k, "step"]
    assert lab.view()["code"][2] == f"loss = loss_fn(out, y) / {k}"
    assert [g.item() for g in grads_after_one_step(lab)] == [-23.5, -8.0]


@pytest.mark.parametrize("k", [2, 4, 8])
def test_moons_micro_batches_equal_the_batch(k: int) -> None:
    lab, full = (
        Lab(Setup("moons", 0.3, 0, PLAIN_SGD, accumulate=k)),
        Lab(Setup("moons", 0.3, 0, PLAIN_SGD)),
    )
    for _ in range(6):  # past the uneven batch of 22, weighted by share
        got = grads_after_one_step(lab)
        full.zero_grad()
        full.forward()
        full.loss()
        full.backward()
        for g, p in zip(got, full.named.values(), strict=True):
            assert p.grad is not None and torch.allclose(g, p.grad, rtol=0, atol=1e-14)
        lab.next()
        full.step()
    assert lab.iteration == 6 * k  # iteration counts forward calls: micro-batches


def test_accumulate_survives_capture_and_restore() -> None:
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, accumulate=4))
    for _ in range(7):
        lab.next()  # zero_grad, then two micro-batches done, two still pending
    saved = lab.capture()
    lab.run(2)
    after = lab.view()["params"]
    lab.restore(saved)
    lab.run(2)
    assert lab.view()["params"] == after
