"""Each preset's numbers, against plain PyTorch running the same lines."""

from __future__ import annotations

import pytest
import torch

from app.engine import Lab, LineError
from app.engine.optimizers import PLAIN_SGD, OptimizerSpec
from app.engine.program import PRESETS, preset_of, program_for, toggles_of
from app.engine.setup import Setup
from support.oracle import Plain
from tests.engine.test_lab import assert_same, grads, wb

BY_NAME = {p.name: list(p.program) for p in PRESETS}


def with_program(name: str, **kw: object) -> Lab:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, **kw))  # type: ignore[arg-type]
    lab.set_program(BY_NAME[name])
    return lab


def test_toggle_presets_are_the_toggle_programs() -> None:
    for name in ("correct", "skip_zero_grad", "step_first"):
        program = BY_NAME[name]
        assert program_for(toggles_of(program)) == program
        assert preset_of(program) == name


def test_zero_grad_between_backward_and_step_moves_nothing() -> None:
    lab = with_program("zero_grad_before_step")
    lab.run(3)
    assert wb(lab) == (0.0, 0.0) and lab.loss_value == 18.5
    assert [p.grad for p in lab.named.values()] == [None, None]


def test_backward_twice_stops_the_run_at_the_second_backward() -> None:
    lab = with_program("backward_twice")
    with pytest.raises(LineError, match="backward through the graph a second time"):
        lab.run(1)
    assert lab.cursor == 4 and lab.next_line == "backward"  # the failing line, not run
    assert grads(lab) == (-23.5, -8.0)  # the lines before it stay done
    assert lab.last is not None and lab.last["line"] == "backward"


def test_backward_twice_with_retain_graph_is_minus_47() -> None:
    lab = with_program("backward_twice_retain")
    for _ in range(5):
        lab.next()
    assert grads(lab) == (-47.0, -16.0)
    lab.next()
    plain = Plain("neuron", 0.05)
    for entry in BY_NAME["backward_twice_retain"]:
        plain.line(entry)
    assert_same(lab, plain)
    assert wb(lab) == pytest.approx((2.35, 0.8))


def test_zeros_instead_of_none() -> None:
    lab = with_program("zeros")
    for _ in range(4):
        lab.next()  # forward, loss, backward, zero_grad(set_to_none=False)
    assert [p["grad"] for p in lab.view()["params"]] == [[[0.0]], [0.0]]
    lab.next()  # step with zeros: plain SGD moves nothing
    assert wb(lab) == (0.0, 0.0)


def test_zeros_move_with_momentum_but_none_does_not() -> None:
    """Seed 001: with momentum a zero gradient still moves the parameter; None is skipped."""
    spec = OptimizerSpec("sgd", momentum=0.9)
    zeros, nones = Lab(Setup("neuron", 0.05, 0, spec)), Lab(Setup("neuron", 0.05, 0, spec))
    plain = Plain("neuron", 0.05, momentum=0.9)
    for lab in (zeros, nones):
        lab.run(2)  # the correct loop fills the momentum buffers
        start = wb(lab)
    zeros.set_program(BY_NAME["zeros"])
    nones.set_program(BY_NAME["zero_grad_before_step"])
    for lab in (zeros, nones):
        lab.run(2)
    assert wb(nones) == start  # step skipped both parameters
    assert wb(zeros)[0] > start[0] + 0.1  # momentum kept pushing
    for entry in [*BY_NAME["correct"] * 2, *BY_NAME["zeros"] * 2]:
        plain.line(entry)
    assert_same(zeros, plain)


# presets that need a setup of their own: tests/engine/test_real_loop.py, with that setup
@pytest.mark.parametrize("name", [p.name for p in PRESETS if not p.setup])
def test_every_preset_equals_plain_pytorch_on_moons(name: str) -> None:
    lab, plain = Lab(Setup("moons", 0.3, 0, PLAIN_SGD)), Plain("moons", 0.3, 0)
    lab.set_program(BY_NAME[name])
    for _ in range(3):
        for entry in BY_NAME[name]:
            try:
                plain.line(entry)
                failed = False
            except RuntimeError:
                failed = True
            if failed:
                with pytest.raises(LineError):
                    lab.next()
                lab.cursor = (lab.cursor + 1) % len(lab.program)  # skip it, as the loop did
            else:
                lab.next()
            assert_same(lab, plain)
    assert torch.isfinite(next(iter(lab.named.values()))).all()
