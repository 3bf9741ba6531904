"""Each parameter's ``.grad`` as the loop has used it: empty, fresh (gradients no step has read
yet), used (read by a step), stale (a backward added onto a used gradient).

The order bugs are transitions of this little machine: a step that reads a stale buffer
(``skip_zero_grad``), one that reads an empty buffer a clear has just emptied
(``zero_grad_before_step``, ``zeros``), a clear of fresh gradients followed by a backward
(``accumulation_reset``), a step before any backward (``step_first``). A buffer is looked at
through its mark, ``(id(grad), grad._version)``: every in-place change bumps the version, so an
unchanged mark means an untouched buffer and costs nothing to check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import torch

from loop_stepper.doctor.where import Place

Mark = tuple[int, int] | None
State = Literal["empty", "fresh", "used", "stale"]


def mark(p: torch.Tensor) -> Mark:
    g = p.grad
    return None if g is None else (id(g), g._version)


def sample(t: torch.Tensor | None, n: int = 3) -> list[float] | None:
    """The first few elements, as evidence (a copy of three numbers, not of the tensor)."""
    if t is None:
        return None
    with torch.no_grad():
        return [float(v) for v in t.detach().reshape(-1)[:n].float().tolist()]


@dataclass(eq=False)
class GradBuffer:
    param: torch.Tensor
    state: State = "empty"
    mark: Mark = None
    fresh_at_steps: int = -1  # the steps taken (by any optimizer) when it last became fresh
    written: bool = False  # some backward wrote it while the doctor watched
    cleared: Place | None = None  # a clear here dropped gradients no step had used
    cleared_to_zeros: bool = False
    stale: tuple[Place, int] | None = None  # the backward (and its iteration) that made it stale
    stale_numbers: dict[str, list[float] | None] = field(default_factory=dict)
    before: Mark = None  # the mark when the running backward began
    held: list[float] | None = None  # its first numbers then, when it was used


class Ledger:
    def __init__(self) -> None:
        self.buffers: dict[int, GradBuffer] = {}
        self.steps = 0  # steps taken by every optimizer (a GAN's two count alike)

    def track(self, params: Iterable[torch.Tensor]) -> list[GradBuffer]:
        found = []
        for p in params:
            buffer = self.buffers.get(id(p))
            if buffer is None:
                m = mark(p)
                # met with a gradient in it: somebody's backward, not yet used as far as we know
                state: State = "empty" if m is None else "fresh"
                buffer = self.buffers[id(p)] = GradBuffer(p, state, m, self.steps)
            found.append(buffer)
        return found

    def sync(self, buffer: GradBuffer, where: Place, zeroed: bool = False) -> None:
        """Catch up with a change nobody told of (``p.grad = None``, a clear, a clip, unscale_):
        emptied, or changed in place (the state stays)."""
        m = mark(buffer.param)
        if m == buffer.mark:
            return
        buffer.mark = m
        g = buffer.param.grad
        if g is not None and not zeroed:
            with torch.no_grad():
                if bool(g.any()):
                    return  # scaled in place: clipping, unscale_, the user's own
        if buffer.state == "fresh" and buffer.fresh_at_steps == self.steps:
            buffer.cleared, buffer.cleared_to_zeros = where, g is not None
        buffer.state = "empty"

    def before_backward(self, where: Place) -> None:
        for buffer in self.buffers.values():
            self.sync(buffer, where)
            buffer.before = buffer.mark
            buffer.held = sample(buffer.param.grad) if buffer.state == "used" else None

    def after_backward(self, where: Place, iteration: int) -> list[GradBuffer]:
        """The buffers this backward wrote; those whose earlier clear it shows lost
        (``accumulation_reset``) are returned."""
        reset = []
        for buffer in self.buffers.values():
            m = mark(buffer.param)
            if m == buffer.before:
                continue
            buffer.mark, buffer.written = m, True
            if buffer.state == "empty":
                if buffer.cleared is not None:
                    reset.append(buffer)
                buffer.state, buffer.fresh_at_steps = "fresh", self.steps
            elif buffer.state == "fresh":
                buffer.fresh_at_steps = self.steps
            elif buffer.state == "used":
                buffer.state, buffer.stale = "stale", (where, iteration)
                now = sample(buffer.param.grad)
                added = None
                if now is not None and buffer.held is not None:
                    added = [a - b for a, b in zip(now, buffer.held, strict=False)]
                buffer.stale_numbers = {"held": buffer.held, "added": added, "now": now}
        return reset
