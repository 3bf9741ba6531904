"""Momentum and Adam: the parameters and the fifth store, bit for bit against plain PyTorch."""

from __future__ import annotations

import torch

from app.engine import Lab
from app.engine.optimizers import OptimizerSpec
from app.engine.setup import Setup
from support.oracle import Plain
from tests.engine.test_lab import assert_same


def run_plain(plain: Plain, iterations: int) -> None:
    for _ in range(iterations):
        for line in ("forward", "loss", "zero_grad", "backward", "step"):
            plain.line(line)


def test_momentum_state_matches_plain_pytorch() -> None:
    spec = OptimizerSpec("sgd", momentum=0.9, weight_decay=0.01)
    lab = Lab(Setup("moons", 0.1, 0, spec))
    plain = Plain("moons", 0.1, 0, momentum=0.9, weight_decay=0.01)
    assert all(row["state"] == {} for row in lab.view()["optimizer_state"])
    lab.run(20)
    run_plain(plain, 20)
    assert_same(lab, plain)
    state = lab.view()["optimizer_state"]
    for row, p in zip(state, plain.model.parameters(), strict=True):
        buffer = plain.optimizer.state[p]["momentum_buffer"]
        assert row["state"]["momentum_buffer"] == buffer.tolist()
    assert lab.last == {
        "line": "step",
        "reads": ["grad", "params", "optimizer_state"],
        "writes": ["params", "optimizer_state"],
        "warnings": [],
        "result": None,
        "scaled": None,
    }


def test_adam_state_matches_plain_pytorch() -> None:
    spec = OptimizerSpec("adam", betas=(0.8, 0.99))
    lab = Lab(Setup("neuron", 0.05, 0, spec))
    plain = Plain("neuron", 0.05, optimizer="adam", betas=(0.8, 0.99))
    lab.run(7)
    run_plain(plain, 7)
    assert_same(lab, plain)
    rows = lab.view()["optimizer_state"]
    weight = next(plain.model.parameters())  # nn.Linear: weight, then bias
    assert rows[0]["name"] == "weight" and rows[0]["state"]["step"] == 7.0
    assert rows[0]["state"]["exp_avg"] == plain.optimizer.state[weight]["exp_avg"].tolist()
    assert rows[0]["state"]["exp_avg_sq"] == plain.optimizer.state[weight]["exp_avg_sq"].tolist()


def test_reset_empties_the_optimizer_state() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, OptimizerSpec("adam")))
    lab.run(3)
    lab.reset()
    assert all(row["state"] == {} for row in lab.view()["optimizer_state"])
    lab.run(3)
    fresh = Lab(Setup("neuron", 0.05, 0, OptimizerSpec("adam")))
    fresh.run(3)
    for p, q in zip(lab.named.values(), fresh.named.values(), strict=True):
        assert torch.equal(p, q)
