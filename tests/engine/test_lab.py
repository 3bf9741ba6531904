"""The engine against plain PyTorch: the lesson's numbers, then random programs bit for bit."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import Lab, LineError, Toggles, answer
from app.engine.amp import AmpSpec
from app.engine.entries import ENTRIES
from app.engine.optimizers import PLAIN_SGD
from app.engine.setup import Setup
from support.oracle import Plain


def wb(lab: Lab) -> tuple[float, float]:
    return lab.named["weight"].item(), lab.named["bias"].item()


def grads(lab: Lab) -> tuple[float, float]:
    w, b = lab.named["weight"].grad, lab.named["bias"].grad
    assert w is not None and b is not None
    return w.item(), b.item()


def test_worked_example_with_zero_grad() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.run(1)
    assert grads(lab) == (-23.5, -8.0)
    assert wb(lab) == pytest.approx((1.175, 0.4))
    assert lab.loss_value == 18.5
    lab.run(1)
    assert grads(lab) == pytest.approx((-3.875, -1.325), abs=1e-5)
    assert wb(lab) == pytest.approx((1.36875, 0.46625))
    assert lab.loss_value == pytest.approx(0.5522, abs=1e-4)
    assert lab.iteration == 2 and lab.steps == 2 and lab.cursor == 0


def test_worked_example_without_zero_grad() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.set_toggles(Toggles(skip_zero_grad=True))
    assert lab.program == ["forward", "loss", "backward", "step"]
    lab.run(2)
    assert grads(lab) == pytest.approx((-27.375, -9.325), abs=1e-5)
    assert wb(lab) == pytest.approx((2.54375, 0.86625))
    lab.forward()
    lab.loss()
    assert lab.loss_value == pytest.approx(12.0899, abs=1e-4)


def test_worked_example_matches_plain_pytorch_exactly() -> None:
    for skip in (False, True):
        lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
        lab.set_toggles(Toggles(skip_zero_grad=skip))
        plain = Plain("neuron", 0.05)
        for _ in range(3):
            lab.run(1)
            for line in lab.program:
                plain.line(line)
            assert_same(lab, plain)


def test_step_first_moves_nothing() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.set_toggles(Toggles(step_first=True))
    assert lab.program == ["forward", "loss", "zero_grad", "step", "backward"]
    lab.run(3)
    assert wb(lab) == (0.0, 0.0)
    assert lab.loss_value == 18.5
    assert grads(lab) == (-23.5, -8.0)  # the last backward's, which no step has read


def test_backward_twice_is_pytorchs_error_and_changes_nothing() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.forward()
    lab.loss()
    lab.backward()
    assert lab.graph()["status"] == "freed"
    before = lab.view()
    with pytest.raises(LineError) as caught:
        lab.backward()
    assert caught.value.torch_error
    assert "Trying to backward through the graph a second time" in caught.value.message
    assert lab.view() == before


def test_retain_graph_adds_the_gradient_twice() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.forward()
    lab.loss()
    lab.backward(retain_graph=True)
    assert lab.graph()["status"] == "built"
    lab.backward()
    assert grads(lab) == (-47.0, -16.0)
    assert lab.graph()["status"] == "freed"


def test_zero_grad_none_is_not_zeros() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.run(1)
    lab.zero_grad(set_to_none=False)
    assert [p["grad"] for p in lab.view()["params"]] == [[[0.0]], [0.0]]
    lab.zero_grad()
    assert [p["grad"] for p in lab.view()["params"]] == [None, None]


def test_lines_out_of_order_say_what_they_need() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    with pytest.raises(LineError, match="run forward first"):
        lab.loss()
    with pytest.raises(LineError, match="run loss first"):
        lab.backward()
    lab.step()  # never errors: .grad is None, so nothing moves
    assert wb(lab) == (0.0, 0.0)
    assert lab.last == {
        "line": "step",
        "reads": ["grad", "params"],
        "writes": ["params"],
        "warnings": [],
        "result": None,
        "scaled": None,
    }


def test_moons_150_iterations_match_the_lesson() -> None:
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    plain = Plain("moons", 0.3, 0)
    lab.run(150)
    losses = []
    for _ in range(150):
        for line in ("forward", "loss", "zero_grad", "backward", "step"):
            plain.line(line)
        assert plain.loss is not None
        losses.append(plain.loss.item())
    assert [h["loss"] for h in lab.history] == losses  # bit for bit
    assert round(losses[0], 4) == 0.7109
    assert round(sum(losses[-5:]) / 5, 3) == 0.196
    assert_same(lab, plain)


def test_moons_batches_are_32_then_22() -> None:
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    sizes = []
    for _ in range(6):
        lab.forward()
        assert lab.out is not None
        sizes.append(lab.out.shape[0])
    assert sizes == [32, 32, 32, 32, 22, 32]


def test_reset_and_restore() -> None:
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    lab.set_toggles(Toggles(skip_zero_grad=True))
    first = lab.view()
    lab.run(7)
    lab.lr = 0.1
    middle = lab.capture()
    lab.run(3)
    after_ten = lab.view()
    lab.restore(middle)
    lab.run(3)
    assert lab.view()["params"] == after_ten["params"]
    lab.reset()
    reset = lab.view()
    assert reset["params"] == first["params"] and reset["iteration"] == 0
    assert reset["lr"] == 0.1 and reset["toggles"]["skip_zero_grad"] is True
    assert reset["history"] == [] and reset["graph"]["status"] == "empty"
    lab.lr = 0.3
    lab.run(1)
    fresh = Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    fresh.set_toggles(Toggles(skip_zero_grad=True))
    fresh.run(1)
    assert lab.view()["params"] == fresh.view()["params"]


def test_toggle_mid_iteration_keeps_the_lines_already_run() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.next()
    lab.next()  # forward, loss done; zero_grad next
    lab.set_toggles(Toggles(skip_zero_grad=True))
    assert lab.next_line == "backward"
    lab.set_toggles(Toggles(step_first=True))
    assert lab.next_line == "zero_grad"


def test_graph_labels_are_pytorchs() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    assert lab.graph() == {"status": "empty", "nodes": [], "edges": [], "out_dtype": None}
    lab.forward()
    assert lab.graph()["out_dtype"] == "float32"
    labels = {n["label"] for n in lab.graph()["nodes"]}
    assert labels == {"AddmmBackward0", "TBackward0", "AccumulateGrad: weight",
                      "AccumulateGrad: bias"}  # fmt: skip
    lab.loss()
    graph = lab.graph()
    assert graph["nodes"][0]["label"] == "MseLossBackward0" and graph["status"] == "built"
    assert len(graph["edges"]) == 4
    assert {n["dtype"] for n in graph["nodes"]} == {"float32"}  # each node's output dtype


def test_diverging_training_keeps_pytorchs_non_finite_values() -> None:
    lab = Lab(Setup("neuron", 100.0, 0, PLAIN_SGD))
    lab.run(40)
    snap = lab.view()
    weight: Any = snap["params"][0]["value"]  # nested lists: a scenario's tensors are small
    values = [weight[0][0], snap["loss"]]
    assert not all(math.isfinite(v) for v in values), values  # the API spells them "NaN" etc.


# -- random programs, bit for bit ------------------------------------------------

LINES = list(ENTRIES)  # every entry a program may hold


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit: a NaN where the other has the same NaN counts as equal (a random
    program under autocast can overflow to NaN, and ``torch.equal`` says NaN != NaN)."""
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and torch.equal(
            a.detach().reshape(-1).view(torch.uint8), b.detach().reshape(-1).view(torch.uint8)
        )
    )


def assert_same(lab: Lab, plain: Plain) -> None:
    for (name, p), q in zip(lab.named.items(), plain.model.parameters(), strict=True):
        assert same_bits(p, q), name
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            assert q.grad is not None and same_bits(p.grad, q.grad), name
    if plain.loss is not None:
        expected = plain.loss.item()
        assert lab.loss_value == expected or (
            math.isnan(expected) and lab.loss_value != lab.loss_value
        )


def same_line(lab: Lab, plain: Plain, line: str) -> None:
    """One line on both: the same refusal (in PyTorch's words when PyTorch refused), or none,
    and the same parameters and .grad after it."""
    try:
        plain.line(line)
        expected = None
    except (RuntimeError, AssertionError, TypeError, AttributeError) as error:
        expected = error
    try:
        lab.run_line(line)
    except LineError as error:
        assert expected is not None, (line, error.message)
        if error.torch_error:
            assert error.message == str(expected)
    else:
        assert expected is None, (line, expected)
    assert_same(lab, plain)


@settings(max_examples=40, deadline=None)
@given(
    scenario=st.sampled_from(["neuron", "moons"]),
    lines=st.lists(st.sampled_from(LINES), max_size=40),
)
def test_random_programs_equal_plain_pytorch(scenario: str, lines: list[str]) -> None:
    lr = 0.05 if scenario == "neuron" else 0.3
    lab, plain = Lab(Setup(scenario, lr, 0, PLAIN_SGD)), Plain(scenario, lr, 0)
    for line in lines:
        same_line(lab, plain, line)


@pytest.mark.parametrize(
    ("scenario", "lines"),
    [  # found by the random programs: resume builds a new model, the old graph reaches the old
        ("moons", ["checkpoint(model_only=True)", "forward", "loss", "resume", "backward"]),
        ("neuron", ["forward", "checkpoint", "loss", "resume", "backward"]),
        ("neuron", ["forward", "loss", "checkpoint(model_only=True)", "resume", "backward"]),
    ],
)
def test_a_graph_built_before_resume_backpropagates_into_the_old_model(
    scenario: str, lines: list[str]
) -> None:
    lr = 0.05 if scenario == "neuron" else 0.3
    lab, plain = Lab(Setup(scenario, lr, 0, PLAIN_SGD)), Plain(scenario, lr, 0)
    for line in lines:
        plain.line(line)
        lab.run_line(line)
        assert_same(lab, plain)
    assert all(p.grad is None for p in lab.named.values())  # the new model's: untouched
    lab.run_line("forward")
    lab.run_line("loss")
    lab.run_line("backward")  # the new model's own graph fills its .grad
    assert all(p.grad is not None for p in lab.named.values())


AMP_SETUPS = {
    "bfloat16": ("bfloat16", True),
    "float16": ("float16", True),
    "float16 without a scaler": ("float16", False),
}


@settings(max_examples=40, deadline=None)
@given(
    scenario=st.sampled_from(["neuron", "moons"]),
    amp=st.sampled_from(list(AMP_SETUPS)),
    lines=st.lists(st.sampled_from(LINES), max_size=40),
)
def test_random_programs_with_amp_equal_plain_pytorch(
    scenario: str, amp: str, lines: list[str]
) -> None:
    """Autocast, and the GradScaler's refusals in PyTorch's words (a second step before update,
    update or step with nothing checked, unscale_ twice), on a float32 model."""
    lr = 0.05 if scenario == "neuron" else 0.3
    dtype, scaler = AMP_SETUPS[amp]
    spec = AmpSpec(dtype, scaler)  # type: ignore[arg-type]
    moons = {"dtype": "float32"} if scenario == "moons" else {}
    lab = Lab(Setup(scenario, lr, 0, PLAIN_SGD, amp=spec, **moons))  # type: ignore[arg-type]
    plain = Plain(scenario, lr, 0, dtype=torch.float32, amp=dtype, grad_scaler=scaler)
    for line in lines:
        same_line(lab, plain, line)
        if plain.scaler is not None:
            assert lab.amp.scaler is not None
            assert lab.amp.scaler.get_scale() == plain.scaler.get_scale()
            assert lab.amp.scaler.state_dict() == plain.scaler.state_dict()


def test_history_since_any_number() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.run(3)
    assert [h["n"] for h in answer.history_since(lab.history, 0)] == [0, 1, 2]
    assert [h["n"] for h in answer.history_since(lab.history, 2)] == [2]
    assert answer.history_since(lab.history, 3) == answer.history_since(lab.history, 10**30) == []


def test_both_bugs_on_moons_is_pytorchs_inplace_error_and_a_freed_graph() -> None:
    """step moves the weights the graph saved, then backward: PyTorch's own RuntimeError. It
    freed what it walked, so the graph shows freed and a retry says so in PyTorch's words."""
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    lab.set_toggles(Toggles(skip_zero_grad=True, step_first=True))
    lab.run(1)
    stores = {k: v for k, v in lab.view().items() if k != "graph"}
    with pytest.raises(LineError, match="modified by an inplace operation") as caught:
        lab.run(1)
    assert caught.value.torch_error and lab.next_line == "backward"
    after = lab.view()
    assert after["graph"]["status"] == "freed"
    assert after["params"] != stores["params"]  # the step before it ran, as in Python
    with pytest.raises(LineError, match="backward through the graph a second time"):
        lab.next()
