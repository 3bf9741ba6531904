"""Predict first: what the line at the cursor will do, found by running it on a scratch Lab.

``outcome`` runs the line on a Lab that is a copy of the student's (a replay, app/log/timeline.py
``Timeline.scratch``) and reads what it did: the stores it wrote, one ``.grad`` element before
and after, the gradient this backward computes alone, PyTorch's error, and for a ``step`` the
loss on the same batch before and after it. ``questions.ask`` turns that into one question.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from app.engine.entries import ENTRIES
from app.engine.errors import LineError
from app.engine.examples import Forward, loss_again

if TYPE_CHECKING:
    from app.engine.lab import Lab

# lines whose effect on .grad a student can reason about (the others leave it as it is)
GRAD_LINES = ("zero_grad", "backward", "clip_grad_norm", "step", "resume")

Value = float | None  # a .grad element: a number, or None when .grad is None


@dataclass
class Outcome:
    """What the line did on the scratch copy."""

    entry: str
    code: str  # the line's Python, as the program shows it
    error: str | None  # its error (PyTorch's words when PyTorch raised) if it raised
    reads: list[str]
    writes: list[str]
    param: str
    index: int
    shape: list[int]
    before: Value
    after: Value
    alone: Value  # backward: the gradient this loss gives alone (what it adds into .grad)
    summed: Value  # backward: what was there plus that gradient, added as PyTorch adds
    loss_before: float | None  # step: the loss just computed (recomputed on the same batch)
    loss_after: float | None  # step: forward and loss on that batch after the step


def element(lab: Lab, name: str, index: int) -> Value:
    grad = lab.named[name].grad
    return None if grad is None else float(grad.detach().flatten()[index].item())


def pick(lab: Lab, rnd: random.Random) -> tuple[str, int]:
    """The ``.grad`` element a question asks about: any parameter, any element of it."""
    name = rnd.choice(list(lab.named))
    return name, rnd.randrange(lab.named[name].numel())


def alone(lab: Lab, name: str, index: int) -> tuple[Value, Value]:
    """The gradient the loss's graph gives this element (scaled as the GradScaler scales it), and
    that gradient added to what .grad holds now; (None, None) when the graph cannot give one."""
    loss, p = lab.loss_tensor, lab.named[name]
    if loss is None or lab.loss_spent:
        return None, None
    scaled = loss if lab.amp.scaler is None else lab.amp.scaler.scale(loss)
    try:
        (g,) = torch.autograd.grad(scaled, [p], retain_graph=True, allow_unused=True)
    except RuntimeError:
        return None, None
    if g is None:
        return None, None
    g = g.detach().flatten()[index]
    old = p.grad
    summed = None if old is None else float((old.detach().flatten()[index] + g).item())
    return float(g.item()), summed


def outcome(lab: Lab, last: Forward | None, rnd: random.Random) -> Outcome:
    """Run the line at the cursor on ``lab`` (a scratch copy: this changes it) and say what it
    did. ``last`` is the newest forward the replay ran, for the loss on the same batch."""
    entry = lab.next_line
    line = ENTRIES[entry].method
    code = lab.described["code"][lab.cursor]
    name, index = pick(lab, rnd)
    before = element(lab, name, index)
    by_itself, summed = alone(lab, name, index) if line == "backward" else (None, None)
    loss_before = None
    if line == "step" and last is not None and last.x is not None and lab.loss_value is not None:
        again = loss_again(lab, last)
        # only when the loss just computed is this batch's at these parameters: a step between
        # forward and loss (or another forward) makes "the same batch" mean something else
        loss_before = again if again == lab.loss_value else None
    error, reads, writes = None, [], []
    try:
        lab.next()
    except LineError as raised:
        error = raised.message
    else:
        assert lab.last is not None
        reads, writes = list(lab.last["reads"]), list(lab.last["writes"])
    loss_after = None
    if loss_before is not None and last is not None:
        loss_after = loss_again(lab, last)
    shape = list(lab.named[name].shape)
    after = element(lab, name, index)
    return Outcome(
        entry,
        code,
        error,
        reads,
        writes,
        name,
        index,
        shape,
        before,
        after,
        by_itself,
        summed,
        loss_before,
        loss_after,
    )


def stores(lab: Lab) -> list[str]:
    """The stores a "writes" question offers: the lesson's four, and each other one this
    session has (a stateful optimizer, a scheduler, dropout or BatchNorm, a GradScaler) or its
    program can write (train/eval, running_loss, ckpt)."""
    s, lines = lab.setting, {ENTRIES[e].method for e in lab.program}
    has = {
        "optimizer_state": s.stateful,
        "lr": s.scheduler,
        "mode": s.mode_matters or bool(lines & {"train", "eval", "resume"}),
        "buffers": s.buffers,
        "running_loss": bool(lines & {"log_item", "log_tensor"}),
        "ckpt": bool(lines & {"checkpoint"}),
        "scaler": s.grad_scaler,
    }
    return ["params", "grad", "graph", "loss", *(k for k, v in has.items() if v)]
