"""``log_tensor`` by the numbers: a reference is named only when the loss graphs it keeps are
more iterations' at every look (``holders.py``), at the statement that stored it, found by
tracing what ran (``lookout.py``), not by the text of the file; the numbers of the run are the
plain loop's bit for bit."""

from __future__ import annotations

import contextlib
import gc
import sys
import types
import weakref
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

import loop_stepper
from loop_stepper.doctor import lookout
from loop_stepper.doctor.holders import Keeper, Spent

HERE = Path(__file__).read_text().splitlines()


def line_of(text: str) -> int:
    """The 1-based line of this file holding ``text`` (once)."""
    (number,) = [i for i, s in enumerate(HERE, start=1) if text in s and "line_of" not in s]
    return number


def summing(kept: bool, iterations: int = 6) -> dict[str, Any]:
    """A loop that sums its losses: as tensors (``kept``) or as floats; the text
    ``total_loss += loss.item()`` also comes first, in a pass under no_grad."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    X, y = torch.randn(32, 4), torch.randn(32, 1)
    total_loss: Any = 0.0
    with torch.no_grad():
        total_loss += F.mse_loss(model(X), y).item()  # the decoy's text
    total_loss = 0
    for i in range(iterations):
        optimizer.zero_grad()
        loss = F.mse_loss(model(X[i : i + 8]), y[i : i + 8])
        loss.backward()
        optimizer.step()
        if kept:
            total_loss += loss  # the kept graph
        else:
            total_loss += loss.item()
    total = total_loss.item() if isinstance(total_loss, torch.Tensor) else total_loss
    return {"total": total, "params": [p.detach().clone() for p in model.parameters()]}


def test_a_tensor_sum_is_named_at_the_statement_that_stores_it() -> None:
    plain = summing(kept=True)
    tracer = sys.gettrace()  # None, or a coverage tool's
    with loop_stepper.watch() as doctor:
        watched = summing(kept=True)
    assert plain["total"] == watched["total"]
    assert all(torch.equal(a, b) for a, b in zip(plain["params"], watched["params"], strict=True))
    (found,) = doctor.diagnoses
    assert found["bug"] == "log_tensor" and found["file"] == __file__
    assert found["line"] == line_of("total_loss += loss  # the kept graph")
    evidence = found["evidence"]
    assert evidence["name"] == "total_loss"
    # looked at the backwards of iterations 2, 3, 4: it kept 1, then 2 iterations' graphs
    assert evidence["graphs"] == 2 and found["iteration"] == 3
    assert isinstance(evidence["nodes"], int) and evidence["nodes"] > 2 * 6
    assert sys.gettrace() is tracer  # the tracing ended with the store found


def test_floats_are_not_named() -> None:
    with loop_stepper.watch() as doctor:
        summing(kept=False)
    assert doctor.diagnoses == []


def test_one_iterations_graph_reassigned_every_iteration_is_not_named() -> None:
    """dcgan's ``errD = errD_real + errD_fake``: it keeps the last iteration's two graphs, never
    more."""
    torch.manual_seed(4)
    net = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    spent = []
    with loop_stepper.watch() as doctor:
        for _ in range(8):
            optimizer.zero_grad()
            real = net(torch.randn(4, 3)).mean()
            real.backward()
            fake = net(torch.randn(4, 3)).mean()
            fake.backward()
            errD = real + fake
            optimizer.step()
            spent.append(errD)
    assert doctor.diagnoses == [] or {d["bug"] for d in doctor.diagnoses} == {"log_tensor"}
    # the list keeps every iteration's: that one is named, at its append; errD is not
    (found,) = doctor.diagnoses
    assert found["evidence"]["name"] == "spent"
    assert found["line"] == line_of("spent.append(errD)")


def test_spent_counts_the_iterations_a_value_keeps() -> None:
    torch.manual_seed(5)
    w = torch.randn(3, requires_grad=True)
    spent = Spent()
    total: Any = 0
    last = None
    counts, lasts = [], []
    for step in range(5):
        loss = (w * torch.randn(3)).sum()
        loss.backward()
        spent.add(loss.grad_fn, step)
        total = total + loss
        last = loss * 2
        counts.append(spent.count(total))
        lasts.append(spent.count(last))
    assert counts == [1, 2, 3, 4, 5]
    assert lasts == [1, 1, 1, 1, 1]
    assert spent.count([loss, loss.detach(), 3.0]) == 1
    assert spent.count(torch.ones(2)) == 0


def test_spent_remembers_a_bounded_number_of_roots() -> None:
    w = torch.randn(2, requires_grad=True)
    spent = Spent()
    for step in range(100):
        for _ in range(10):  # LBFGS: many backwards a step
            loss = (w * w).sum()
            loss.backward()
            spent.add(loss.grad_fn, step)
    assert list(spent.labels) == list(range(92, 100))
    assert all(len(roots) == 4 for roots in spent.labels.values())
    assert len(spent.ids) <= 8 * 4 * 2  # each root and the nodes just below it


class Meter:
    def __init__(self) -> None:
        self.sum: Any = 0.0

    def update(self, value: Any) -> None:
        self.sum += value  # the meter's store


def test_an_attribute_stored_in_a_method_is_named_in_that_method() -> None:
    torch.manual_seed(6)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    meter = Meter()
    with loop_stepper.watch() as doctor:
        for _ in range(6):
            optimizer.zero_grad()
            loss = model(torch.randn(5, 3)).pow(2).mean()
            loss.backward()
            optimizer.step()
            meter.update(loss)
    (found,) = doctor.diagnoses
    assert found["bug"] == "log_tensor" and found["evidence"]["name"] == "meter.sum"
    assert found["line"] == line_of("self.sum += value  # the meter's store")


def test_under_another_tracer_the_line_comes_from_the_code() -> None:
    """A debugger or coverage traces: the doctor leaves its tracer alone and takes the store of
    the name in the same function nearest the line the frame runs."""

    def tracer(frame: types.FrameType, event: str, arg: Any) -> None:
        return None

    sys.settrace(tracer)
    try:
        with loop_stepper.watch() as doctor:
            summing(kept=True)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)
    (found,) = doctor.diagnoses
    assert found["line"] == line_of("total_loss += loss  # the kept graph")


def test_fallback_reads_stores_and_list_calls_from_the_bytecode() -> None:
    def body() -> None:
        history: list[Any] = []
        count = 0
        history.append(count)
        count = count + 1

    frame = sys._getframe()
    code = body.__code__
    first = code.co_firstlineno
    assert lookout._stores(code, "history", None) == [first + 1, first + 3]
    assert lookout._stores(code, "count", None) == [first + 2, first + 4]
    holder = Keeper("sum", (Meter, "sum"), lambda: None, frame, Meter)
    assert lookout.fallback(holder) == (__file__, line_of("self.sum += value  # the meter"))


class Token:
    """Lives as long as the graph node that holds it."""


class Marked(torch.autograd.Function):
    """The identity, whose graph node holds a ``Token``: while the node lives, so does it."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, alive: list[Any]) -> torch.Tensor:
        token = Token()
        ctx.token = token
        alive.append(weakref.ref(token))
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


def lbfgs(steps: int, watched: bool) -> tuple[int, list[torch.Tensor]]:
    """An LBFGS loop (ten closures a step): the graphs still alive after it, and its weights."""
    torch.manual_seed(8)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=10)
    X, y = torch.randn(16, 3), torch.randn(16, 1)
    alive: list[Any] = []
    with loop_stepper.watch() if watched else contextlib.nullcontext():
        for _ in range(steps):

            def closure() -> torch.Tensor:
                optimizer.zero_grad()
                loss = F.mse_loss(Marked.apply(model(X), alive), y)
                loss.backward()
                return loss

            optimizer.step(closure)
    gc.collect()
    return sum(ref() is not None for ref in alive), [p.detach().clone() for p in model.parameters()]


def test_the_doctor_keeps_no_graph_of_the_run_alive() -> None:
    """The doctor knows the graphs backwards ran from by their nodes' sequence numbers: after
    30 LBFGS steps (300 graphs) it keeps none alive, as the plain loop keeps none."""
    plain_alive, plain = lbfgs(30, watched=False)
    watched_alive, watched = lbfgs(30, watched=True)
    assert plain_alive == watched_alive == 0
    assert all(torch.equal(a, b) for a, b in zip(plain, watched, strict=True))


def test_a_list_that_starts_keeping_graphs_late_is_named_past_what_is_remembered() -> None:
    """Graphs kept from iteration 11 on: the looks of the first iterations found floats, the
    one at iteration 32 more iterations' graphs than the doctor remembers (8): named then."""
    torch.manual_seed(9)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    history: list[Any] = []
    with loop_stepper.watch() as doctor:
        for i in range(70):
            optimizer.zero_grad()
            loss = model(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            optimizer.step()
            history.append(loss if i >= 10 else loss.item())  # the late keeper
    (found,) = doctor.diagnoses
    assert found["bug"] == "log_tensor" and found["iteration"] == 32
    assert found["line"] == line_of("history.append(loss if i >= 10 else loss.item())")
    assert found["evidence"]["graphs"] == 8


def far_store(iterations: int = 6) -> None:
    """The store that keeps the graphs runs far below the backward; another store of the same
    name (which runs once, with no graph) sits next to it."""
    torch.manual_seed(10)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    X = torch.randn(8, 3)
    total: Any = None
    for i in range(iterations):
        if i == 0:
            total = 0  # the store next to the backward
        loss = model(X).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        scale = 1.0 / (i + 1)
        shown = loss.item() * scale
        assert shown >= 0
        total = total + loss  # the far store
    assert isinstance(total, torch.Tensor)


def test_the_line_is_the_store_that_ran_not_the_nearest_in_the_text() -> None:
    with loop_stepper.watch() as doctor:
        far_store()
    (found,) = doctor.diagnoses
    assert found["line"] == line_of("total = total + loss  # the far store")

    # from the code alone (another tracer running), the nearest store is taken: the wrong one
    def tracer(frame: types.FrameType, event: str, arg: Any) -> None:
        return None

    sys.settrace(tracer)
    try:
        with loop_stepper.watch() as doctor:
            far_store()
    finally:
        sys.settrace(None)
    (found,) = doctor.diagnoses
    assert found["line"] == line_of("total = 0  # the store next to the backward")
