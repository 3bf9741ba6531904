"""Explain a number: the worked example's parts and examples exactly, and on random histories
(neuron, moons with accumulation, dropout, BatchNorm, clipping, a GradScaler) the parts fold to
.grad bit for bit and each added part's examples add up to it within 1e-6."""

from __future__ import annotations

import contextlib
import math
import random
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import LineError
from app.engine.amp import AmpSpec
from app.engine.optimizers import PLAIN_SGD, OptimizerSpec
from app.log.records import Setup
from app.log.timeline import Timeline, TimelineError
from app.predict.explanations import explain
from app.predict.predictions import NotOffered
from tests.log.test_timeline import setup


def timeline(program: tuple[str, ...], lines: int, **options: Any) -> Timeline:
    t = Timeline(Setup("neuron", 0.05, 0, PLAIN_SGD, program=program, **options))
    for _ in range(lines):
        t.next()
    return t


def summary(t: Timeline, param: str = "weight") -> list[tuple[Any, ...]]:
    data = explain(t, param, 0)
    return [
        (
            p["op"],
            p.get("value", p.get("factor")),
            p["line"],
            [e["contribution"] for e in p["examples"]],
        )
        for p in data["parts"]
    ]


def test_the_worked_example() -> None:
    """-23.5 is x * (-2y) / 4 summed over the four points; skip_zero_grad keeps iteration 1's
    part beside this one's; backward(retain_graph=True) then backward adds the same part twice."""
    correct = timeline(("forward", "loss", "zero_grad", "backward", "step"), 4)
    data = explain(correct, "weight", 0)
    assert data["value"] == -23.5 and data["examples_sum_error"] == 0.0
    (part,) = data["parts"]
    assert (part["op"], part["value"], part["moment"], part["iteration"]) == ("add", -23.5, 4, 1)
    assert [(e["i"], e["contribution"]) for e in part["examples"]] == [
        (0, -1.0),
        (1, -3.0),
        (2, -7.5),
        (3, -12.0),
    ]
    assert summary(correct, "bias") == [("add", -8.0, "backward", [-1.0, -1.5, -2.5, -3.0])]

    skip = timeline(("forward", "loss", "backward", "step"), 7)
    data = explain(skip, "weight", 0)
    first, second = data["parts"]
    assert (first["value"], first["moment"], first["iteration"]) == (-23.5, 3, 1)
    assert (second["moment"], second["iteration"]) == (7, 2)
    assert second["value"] == pytest.approx(-3.875, abs=1e-5)
    assert data["value"] == pytest.approx(-27.375, abs=1e-5)
    assert torch.tensor(-23.5) + torch.tensor(second["value"]) == torch.tensor(data["value"])

    twice = timeline(
        ("forward", "loss", "zero_grad", "backward(retain_graph=True)", "backward", "step"), 5
    )
    assert explain(twice, "weight", 0)["value"] == -47.0
    assert summary(twice) == [
        ("add", -23.5, "backward(retain_graph=True)", [-1.0, -3.0, -7.5, -12.0]),
        ("add", -23.5, "backward", [-1.0, -3.0, -7.5, -12.0]),
    ]


def test_none_and_bad_names() -> None:
    t = timeline(("forward", "loss", "zero_grad", "backward", "step"), 3)
    with pytest.raises(
        TimelineError,
        match=r"weight\.grad is None: no backward has written it "
        "since it was emptied",
    ):
        explain(t, "weight", 0)
    with pytest.raises(NotOffered, match="no parameter"):
        explain(t, "nope", 0)
    with pytest.raises(NotOffered, match="index must be 0 to 0"):
        explain(t, "weight", 1)


def fold(parts: list[dict[str, Any]], dtype: torch.dtype) -> float:
    v = None
    for p in parts:
        if p["op"] == "add":
            g = torch.tensor(p["value"], dtype=dtype)
            v = g if v is None else v + g
        elif v is not None:
            v = v * torch.tensor(p["factor"], dtype=dtype)
    return 0.0 if v is None else float(v.item())


SETUPS: list[tuple[str, int, dict[str, Any]]] = [
    ("neuron", 1, {}),
    ("neuron", 2, {"max_norm": 0.5}),
    ("neuron", 1, {"amp": AmpSpec("float16")}),  # the GradScaler's unscale scales .grad
    ("moons", 2, {}),
    ("moons", 4, {"max_norm": 0.1}),
    ("moons", 1, {"dropout": 0.5}),
    ("moons", 2, {"dropout": 0.3, "batchnorm": True, "max_norm": 0.5}),
    ("parabola", 1, {}),
]
LINES = [
    "forward", "loss", "zero_grad", "zero_grad(set_to_none=False)", "backward",
    "backward(retain_graph=True)", "step", "clip_grad_norm", "train", "eval",
    "checkpoint", "resume", "scaler_update",
]  # fmt: skip


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@settings(max_examples=12, deadline=None)
@given(
    which=st.integers(0, len(SETUPS) - 1),
    optimizer=st.sampled_from([PLAIN_SGD, OptimizerSpec("adam")]),
    actions=st.lists(st.one_of(st.none(), st.sampled_from(LINES)), min_size=4, max_size=24),
    seed=st.integers(0, 2**16),
)
def test_parts_fold_to_grad_bit_for_bit(
    which: int, optimizer: OptimizerSpec, actions: list[str | None], seed: int
) -> None:
    scenario, accumulate, extras = SETUPS[which]
    t = Timeline(setup(scenario, optimizer, accumulate, extras), every=3)
    rnd = random.Random(seed)
    for action in actions:
        with contextlib.suppress(LineError):
            t.next() if action is None else t.line(action)
        name = rnd.choice(list(t.lab.named))  # one element per moment: a split is a Jacobian
        for p in [t.lab.named[name]]:
            index = rnd.randrange(p.numel())
            if p.grad is None:
                with pytest.raises(TimelineError, match="is None"):
                    explain(t, name, index)
                continue
            data = explain(t, name, index)
            value = p.grad.flatten()[index].item()
            # a diverged run's .grad may be NaN: the same NaN, bit for bit, is the right answer
            assert same(data["value"], value)
            assert same(fold(data["parts"], p.dtype), value), (name, data["parts"])
            for part in data["parts"]:
                if part["op"] != "add" or not part["examples"] or not math.isfinite(value):
                    continue
                total = sum(e["contribution"] for e in part["examples"])
                size = sum(abs(e["contribution"]) for e in part["examples"])
                # + 1e-12: a bias right before BatchNorm has a gradient that is 0 but for
                # rounding (~1e-17), and so are its contributions: noise on both sides
                assert abs(total - part["value"]) <= 1e-6 * max(abs(part["value"]), size) + 1e-12
