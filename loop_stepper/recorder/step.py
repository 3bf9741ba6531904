"""The training loop around a step written by hand: the innermost loop of the user's code around
the statement that moved the parameters (``p.data += -lr * p.grad``, ``param -= lr * grad``
under ``no_grad``), not counting a loop over the parameters themselves (``for p in
parameters``: its variable holds a parameter) or over what holds them (``for layer in
layers``). Its passes are the iterations, as the loop around ``backward()`` is for a loop that
steps with an optimizer.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch

from loop_stepper.recorder.frame import Frame
from loop_stepper.recorder.names import search
from loop_stepper.recorder.source import Statement
from loop_stepper.recorder.watched import Watched

Loop = tuple[types.CodeType, int]  # a loop by its code and its header's line


def loop_around(
    statement: Statement,
    frame: types.FrameType,
    frames_for: Callable[[types.FrameType], Frame | None],
    watched: Watched,
) -> Loop | None:
    """The loop whose passes a hand-written step at ``statement`` (running in ``frame``)
    counts, looking out through the frames that called it; None outside any such loop (a
    parameter set up by hand before the loop)."""
    at: types.FrameType | None = frame
    loops = statement.loops
    while at is not None:
        state = frames_for(at)
        if state is not None:
            scope = at.f_locals
            for header in reversed(loops):
                names = state.source.loop_targets.get(header, ())
                if not any(_holds(watched, scope[n]) for n in names if n in scope):
                    return at.f_code, header
        at = at.f_back
        if at is not None:
            caller = frames_for(at)
            loops = () if caller is None or caller.current is None else caller.current.loops
    return None


def _holds(watched: Watched, value: Any) -> bool:
    """``value`` is a watched tensor or reaches one (a loop over the parameters, or over the
    layers holding them)."""
    if isinstance(value, torch.Tensor):
        return watched.name_of(value) is not None
    hit: list[bool] = []
    search([("x", value)], lambda _, v: hit.append(watched.name_of(v) is not None))
    return any(hit)
