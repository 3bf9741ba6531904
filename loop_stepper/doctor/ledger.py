"""Each parameter's ``.grad`` as the loop has used it: empty, fresh (gradients no step has read
yet), used (read by a step), stale (a backward added onto a used gradient).

The order bugs are transitions of this little machine: a step that reads a stale buffer
(``skip_zero_grad``), one that reads an empty buffer a clear has just emptied
(``zero_grad_before_step``, ``zeros``), a clear of fresh gradients followed by a backward
(``accumulation_reset``), a step before any backward (``step_first``). A buffer is looked at
through its mark, ``(id(grad), grad._version)``: every in-place change bumps the version, so an
unchanged mark means an untouched buffer and costs nothing to check.

What changed a mark nobody told of is read from what happened, not from the value alone: a
gradient a backward wrote as exactly zero (a zero-initialised layer's first backward, LoRA's
``A`` while ``B`` is zero) stays a gradient when a clip or an unscale scales it in place; only a
heard clear, or a change to zeros of a gradient the backward wrote nonzero (``p.grad.zero_()``,
``fill_(0)``), empties it. Whether a backward wrote zeros is looked at in the sampled iterations
(its first elements, all of them when those are zero) and holds until the next look: an exactly
zero gradient comes of a layer's initialisation, at the first iterations.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import nn

from loop_stepper.doctor.shards import local
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
        return [float(v) for v in local(t).detach().reshape(-1)[:n].float().tolist()]


def _nonzero(g: torch.Tensor) -> bool:
    """Whether a gradient holds a nonzero element: its first ones, else all of them (a whole
    ``any()`` of a large gradient costs as much as an optimizer's step)."""
    g = local(g)
    with torch.no_grad():
        head = g.detach().reshape(-1)[:64] if g.is_contiguous() else g
        return bool(head.any()) or (head is not g and bool(g.any()))


@dataclass(eq=False)
class GradBuffer:
    param: torch.Tensor
    state: State = "empty"
    mark: Mark = None
    fresh_at_steps: int = -1  # the steps taken (by any optimizer) when it last became fresh
    written: bool = False  # some backward wrote it while the doctor watched
    written_at: int = 0  # the ledger's backwards when one last wrote it
    cleared: Place | None = None  # a clear here dropped gradients no step had used
    cleared_to_zeros: bool = False
    zero_written: bool = False  # the last backward looked at wrote exactly zeros
    stale: tuple[Place, int] | None = None  # the backward (and its iteration) that made it stale
    stale_numbers: dict[str, list[float] | None] = field(default_factory=dict)
    before: Mark = None  # the mark when the running backward began
    held: list[float] | None = None  # its first numbers then, when it was used


class Ledger:
    def __init__(self) -> None:
        self.buffers: dict[int, GradBuffer] = {}
        self.steps = 0  # steps taken by every optimizer (a GAN's two count alike) and by hand
        self.backwards = 0  # backwards that ended
        self.loose: set[int] = (
            set()
        )  # plain tensors (not Parameters) tracked as a backward met them

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

    def reached(self, leaves: list[torch.Tensor]) -> set[int]:
        """Track the leaves a backward reaches (a loop without an optimizer names its parameters
        nowhere else). A plain tensor tracked so and not reached again is let go (an input that
        required grad, new at every batch): the ids let go are returned."""
        now = {id(t) for t in leaves}
        gone = self.loose - now
        for key in gone:
            self.buffers.pop(key, None)
        self.loose -= gone
        self.loose |= {
            id(t) for t in leaves if id(t) not in self.buffers and not isinstance(t, nn.Parameter)
        }
        self.track(leaves)
        return gone

    def sync(self, buffer: GradBuffer, where: Place, zeroed: bool = False) -> None:
        """Catch up with a change nobody told of (``p.grad = None``, a clear, a clip,
        unscale_): emptied (to None; to zeros by a heard clear, or by an unheard one of a
        gradient the backward wrote nonzero), or changed in place (the state stays)."""
        m = mark(buffer.param)
        if m == buffer.mark:
            return
        buffer.mark = m
        g = buffer.param.grad
        if g is not None and not zeroed:
            if buffer.zero_written:
                return  # a zero gradient scaled in place (a clip, unscale_): it stays one
            with torch.no_grad():
                if bool(local(g).any()):
                    return  # scaled in place: unscale_, the user's own clipping
        if buffer.state == "fresh" and buffer.fresh_at_steps == self.steps:
            buffer.cleared, buffer.cleared_to_zeros = where, g is not None
        buffer.state = "empty"

    def before_backward(self, where: Place) -> None:
        for buffer in self.buffers.values():
            self.sync(buffer, where)
            if buffer.state == "used" and (g := buffer.param.grad) is not None and not _nonzero(g):
                # all zeros (``p.grad.data.zero_()``, d2l's hand-written optimizers: a clear no
                # version tells): adding onto it is a fresh gradient, by the numbers
                buffer.state = "empty"
            buffer.before = buffer.mark
            buffer.held = sample(buffer.param.grad) if buffer.state == "used" else None

    def after_backward(
        self, where: Place, iteration: int, look: bool
    ) -> tuple[list[GradBuffer], list[GradBuffer]]:
        """The buffers this backward wrote, and those of them whose earlier clear it shows lost
        (``accumulation_reset``); with ``look``, whether it wrote zeros into each."""
        self.backwards += 1
        written, reset = [], []
        for buffer in self.buffers.values():
            m = mark(buffer.param)
            if m == buffer.before:
                continue
            buffer.mark, buffer.written, buffer.written_at = m, True, self.backwards
            written.append(buffer)
            if look and (g := buffer.param.grad) is not None:
                buffer.zero_written = not _nonzero(g)
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
        return written, reset
