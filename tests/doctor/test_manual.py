"""Steps written by hand, read as steps: a loop that moves its parameters with their gradients
without an optimizer (``p.data.add_(-lr * p.grad)``, ``param -= lr * param.grad`` under
``no_grad``) is checked as one that calls ``optimizer.step()``, counted by its updates, and its
numbers are bit for bit the plain loop's. Also what a step reads around it: a gradient that is
really zero stays one under a clip, an unused sub-module is not a bug, ``step(closure)`` with
the backward outside it reads that backward.

Each loop runs plainly and under ``watch()``; the diagnoses are asserted with their lines in
this file (found by the comment each such line carries) and their numbers against the plain
run's own ``.grad``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import loop_stepper
from loop_stepper.doctor import hands
from loop_stepper.doctor.chart import Stopped

SOURCE = Path(__file__).read_text().splitlines()


def line_of(marker: str) -> int:
    """The line of this file that ends with ``# <marker>``."""
    (number,) = [i for i, text in enumerate(SOURCE, start=1) if text.endswith(f"# {marker}")]
    return number


def grad(p: torch.Tensor) -> torch.Tensor:
    assert p.grad is not None
    return p.grad


def data(n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    X = torch.randn(n, 16, 3, generator=g)
    return X, X @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3


def data_loop(zero: bool, n: int = 6) -> dict[str, Any]:
    """pytorch/examples' regression: ``p.data.add_(-lr * p.grad)``, ``zero_grad()`` or not.
    Gives the final parameters, the first weight's gradient after each backward and the
    number of updates."""
    torch.manual_seed(5)
    fc = nn.Linear(3, 1)
    X, Y = data(n)
    grads = []
    for i in range(n):
        loss = ((fc(X[i]) - Y[i]) ** 2).mean()
        loss.backward()  # data_loop's backward
        grads.append([float(v) for v in grad(fc.weight).reshape(-1)[:3]])
        for p in fc.parameters():
            p.data.add_(-0.1 * grad(p))
        if zero:
            fc.zero_grad()
    return {"params": [p.detach().clone() for p in fc.parameters()], "grads": grads}


def no_grad_loop(zero: bool, n: int = 6) -> dict[str, Any]:
    """d2l's scratch regression: plain tensors ``w, b``, ``param -= lr * param.grad`` under
    ``no_grad``, then ``param.grad.zero_()`` or not."""
    torch.manual_seed(6)
    w = torch.normal(0, 0.01, (3, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    X, Y = data(n)
    for i in range(n):
        (((X[i] @ w + b) - Y[i]) ** 2 / 2).sum().backward()  # no_grad_loop's backward
        with torch.no_grad():
            for param in (w, b):
                param -= 0.01 * grad(param) / 16
                if zero:
                    grad(param).zero_()
    return {"params": [w.detach().clone(), b.detach().clone()]}


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) > 0 and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("loop", [data_loop, no_grad_loop])
def test_a_correct_loop_written_by_hand_is_named_nothing_and_counted(loop: Any) -> None:
    plain = loop(zero=True)
    with loop_stepper.watch() as doctor:
        watched = loop(zero=True)
    assert doctor.diagnoses == []
    assert doctor.primary_steps == doctor.hand_steps == 6  # each update a step, the last at close
    assert same(watched["params"], plain["params"])
    assert not same(plain["params"], loop(zero=True, n=5)["params"])  # the updates moved them


def test_a_data_update_without_zero_grad_is_skip_zero_grad_with_the_runs_numbers() -> None:
    plain = data_loop(zero=False)
    with loop_stepper.watch() as doctor:
        watched = data_loop(zero=False)
    assert same(watched["params"], plain["params"])
    (found,) = doctor.diagnoses
    assert found["bug"] == "skip_zero_grad" and found["file"] == __file__
    assert found["line"] == line_of("data_loop's backward")
    assert found["iteration"] == 2
    # held: what the first backward wrote; now: that plus the second's, as .grad holds it
    first, second = plain["grads"][0], plain["grads"][1]
    assert found["evidence"]["param"] == "fc.weight"
    assert found["evidence"]["held"] == first
    assert found["evidence"]["now"] == second
    assert found["evidence"]["added"] == [b - a for a, b in zip(first, second, strict=True)]
    assert doctor.primary_steps == 6


def test_a_no_grad_update_without_grad_zero_is_skip_zero_grad_at_its_backward() -> None:
    plain = no_grad_loop(zero=False)
    with loop_stepper.watch() as doctor:
        watched = no_grad_loop(zero=False)
    assert same(watched["params"], plain["params"])
    assert [(d["bug"], d["line"], d["iteration"]) for d in doctor.diagnoses] == [
        ("skip_zero_grad", line_of("no_grad_loop's backward"), 2)
    ]


def test_checksums_find_the_same_steps_beyond_the_copy_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hands, "COPY_BUDGET", 0)  # every fingerprint a checksum
    with loop_stepper.watch() as doctor:
        data_loop(zero=False)
    assert [(d["bug"], d["line"]) for d in doctor.diagnoses] == [
        ("skip_zero_grad", line_of("data_loop's backward"))
    ]
    assert doctor.primary_steps == 6


def test_iterations_count_updates_by_hand_also_with_a_backward_written_by_hand() -> None:
    with pytest.raises(Stopped), loop_stepper.watch(iterations=3) as doctor:
        data_loop(zero=True, n=6)
    assert doctor.primary_steps == 3
    # makemore part 4: no backward() at all, the gradients computed by hand under no_grad
    torch.manual_seed(7)
    W = torch.randn(3, 4, requires_grad=True)
    X, y = torch.randn(32, 3), torch.randint(0, 4, (32,))
    done = 0
    with pytest.raises(Stopped), loop_stepper.watch(iterations=4) as doctor, torch.no_grad():
        for _ in range(10):
            logits = X @ W
            nn.functional.cross_entropy(logits, y)
            dlogits = torch.softmax(logits, 1)
            dlogits[range(32), y] -= 1
            W.data += -0.5 * (X.T @ dlogits / 32)
            done += 1
    assert done == 4 and doctor.primary_steps == 4  # stopped at the fifth loss, after 4 updates
    assert doctor.diagnoses == []


def clipped_loop(clear: str) -> list[torch.Tensor]:
    """A zero-initialised last layer (every earlier layer's first gradient exactly 0), clipped
    in place before Adam's step; ``clear`` empties the gradients between backward and step:
    not at all, by ``p.grad.zero_()`` (heard by nobody) or ``zero_grad(set_to_none=False)``."""
    torch.manual_seed(8)
    first, last = nn.Linear(3, 8), nn.Linear(8, 1)
    nn.init.zeros_(last.weight)
    model = nn.Sequential(first, nn.ReLU(), last)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    X, Y = data(4)
    for i in range(4):
        optimizer.zero_grad()
        ((model(X[i]) - Y[i]) ** 2).mean().backward()
        if i == 0:
            assert not grad(first.weight).any()  # a real gradient of exactly zero
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        if clear == "unheard" and i == 2:
            for p in model.parameters():
                grad(p).zero_()  # heard by nobody: the step shows it
        if clear == "heard" and i == 2:
            optimizer.zero_grad(set_to_none=False)  # clipped_loop's heard clear
        optimizer.step()  # clipped_loop's step
    return [p.detach().clone() for p in model.parameters()]


def test_a_real_zero_gradient_clipped_is_no_clear_and_a_clear_to_zeros_is_zeros() -> None:
    lines = {
        "none": [],
        "unheard": ["clipped_loop's step"],
        "heard": ["clipped_loop's heard clear"],
    }
    for clear, named in lines.items():
        plain = clipped_loop(clear)
        with loop_stepper.watch() as doctor:
            watched = clipped_loop(clear)
        assert same(watched, plain)
        want = [("zeros", line_of(n), 3) for n in named]
        assert [(d["bug"], d["line"], d["iteration"]) for d in doctor.diagnoses] == want


class Aux(nn.Module):
    """A backbone, a head, an aux head only one configuration calls, a parameter read only for
    its ``.device`` and, with ``cut``, a backbone whose output is detached."""

    def __init__(self, cut: bool) -> None:
        super().__init__()
        self.backbone = nn.Linear(3, 8)
        self.head = nn.Linear(8, 1)
        self.aux_head = nn.Linear(8, 1)
        self.dummy = nn.Parameter(torch.empty(0))
        self.cut = cut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.backbone(x.to(self.dummy.device))
        out: torch.Tensor = self.head(features.detach() if self.cut else features)
        return out


@pytest.mark.parametrize("cut", [False, True])
def test_no_gradient_only_for_parameters_the_forward_used(cut: bool) -> None:
    torch.manual_seed(9)
    model = Aux(cut)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    X, Y = data(4)
    with loop_stepper.watch() as doctor:
        for i in range(4):
            optimizer.zero_grad()
            ((model(X[i]) - Y[i]) ** 2).mean().backward()  # Aux's backward
            optimizer.step()
    found = [(d["bug"], d["line"], d["iteration"]) for d in doctor.diagnoses]
    assert found == ([("no_gradient", line_of("Aux's backward"), 2)] if cut else [])
    if cut:  # the backbone the forward ran and the loss cut off, not the aux head nor dummy
        assert doctor.diagnoses[0]["evidence"]["params"] == [
            "model.backbone.weight",
            "model.backbone.bias",
        ]
    assert model.aux_head.weight.grad is None and model.dummy.grad is None
    assert (model.backbone.weight.grad is None) is cut


class OnlyReturns:
    """A framework's wrapper in manual optimization: ``step`` goes through a closure that only
    returns (the loop ran the backward before it)."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer

    def step(self) -> None:
        def closure() -> Any:
            return None

        self.optimizer.step(closure)


@pytest.mark.parametrize("zero", [True, False])
def test_a_closure_step_reads_the_backward_run_before_it(zero: bool) -> None:
    def run() -> list[torch.Tensor]:
        torch.manual_seed(10)
        model = nn.Linear(3, 1)
        optimizer = OnlyReturns(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        X, Y = data(4)
        for i in range(4):
            if zero:
                optimizer.optimizer.zero_grad()
            ((model(X[i]) - Y[i]) ** 2).mean().backward()  # the closure loop's backward
            optimizer.step()
        return [p.detach().clone() for p in model.parameters()]

    plain = run()
    with loop_stepper.watch() as doctor:
        watched = run()
    assert same(watched, plain)
    found = [(d["bug"], d["line"], d["iteration"]) for d in doctor.diagnoses]
    assert found == (
        [] if zero else [("skip_zero_grad", line_of("the closure loop's backward"), 2)]
    )
    assert doctor.primary_steps == 4 and doctor.hand_steps == 0


def test_lbfgs_evaluating_its_closure_again_is_named_nothing() -> None:
    def run() -> list[torch.Tensor]:
        torch.manual_seed(11)
        model = nn.Linear(3, 1)
        optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
        X, Y = data(1)

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            loss: torch.Tensor = ((model(X[0]) - Y[0]) ** 2).mean()
            loss.backward()
            return loss

        for _ in range(3):
            optimizer.step(closure)
        return [p.detach().clone() for p in model.parameters()]

    plain = run()
    with loop_stepper.watch() as doctor:
        watched = run()
    assert same(watched, plain)
    assert doctor.diagnoses == []
    assert doctor.primary_steps == 3 and doctor.backwards > 3  # several evaluations per step
