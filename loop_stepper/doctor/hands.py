"""Steps written by hand: the parameters a backward wrote gradients into, moved by the loop's
own arithmetic (``param -= lr * param.grad`` under ``no_grad``, ``p.data.add_(p.grad,
alpha=-lr)``, ``p.data += -lr * p.grad``) and not by an optimizer's ``step()``.

Nothing announces such a step. ``no_grad`` arithmetic bumps the parameter's version, but
``p.data`` is a tensor with a version counter of its own, so an update through it leaves
``p._version`` as it was: the step is found by the numbers. After a backward each parameter it
wrote is remembered by an exact fingerprint; at the next call the doctor hears (a backward, a
clear, a clip, the run's end) a fingerprint that no longer matches is a parameter the loop moved
since, by hand, with the gradient that backward had written.

A fingerprint is a copy of the parameter's bits while the copies stay under ``COPY_BUDGET``
elements in all (compared exactly, NaN included), and beyond it a checksum, the sum of its
elements' bit patterns as 64-bit integers: no memory and one read, and an update moves nearly
every element, so its changes cancel in the sum only by a coincidence of bits. Fingerprints are
taken only while no optimizer has stepped (an optimizer's step is heard), so a loop with an
optimizer pays for them at its first backward alone.
"""

from __future__ import annotations

import types
from collections.abc import Iterable

import torch

from loop_stepper.doctor import graphs
from loop_stepper.doctor.ledger import GradBuffer
from loop_stepper.doctor.shards import local

COPY_BUDGET = 1 << 22  # elements copied in all (16 MB of float32), checksums beyond
_INTS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
Print = torch.Tensor | int  # a copy of the bits, or their checksum


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's elements as integers of their width (equal exactly when their bits are)."""
    data = local(t).detach()
    kind = _INTS.get(data.element_size())
    return data if kind is None or data.is_complex() else data.view(kind)


def leaves_held(frames: Iterable[types.FrameType]) -> list[torch.Tensor]:
    """The tensors that require grad the user's names hold, alone or in a list or tuple
    (``parameters = [C, W1, b1]``): what a loop with a backward written by hand updates."""
    found: dict[int, torch.Tensor] = {}
    for _, _, value in graphs.scopes(frames):
        held = value if isinstance(value, list | tuple) and len(value) <= 256 else (value,)
        for t in held:
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf:
                found.setdefault(id(t), t)
    return list(found.values())


def checksum(b: torch.Tensor) -> int:
    return int(b.sum(dtype=torch.int64)) if not b.is_floating_point() else hash(b.sum().item())


class HandSteps:
    def __init__(self) -> None:
        self.prints: dict[int, tuple[GradBuffer, Print]] = {}
        self.copied = 0  # elements held in copies

    def remember(self, buffers: Iterable[GradBuffer]) -> None:
        """Fingerprint the parameters of ``buffers`` not fingerprinted yet."""
        with torch.no_grad():
            for buffer in buffers:
                key = id(buffer.param)
                if key in self.prints:
                    continue
                b = bits(buffer.param)
                if self.copied + b.numel() <= COPY_BUDGET:
                    self.prints[key] = buffer, b.clone()
                    self.copied += b.numel()
                else:
                    self.prints[key] = buffer, checksum(b)

    def moved(self) -> list[GradBuffer]:
        """The buffers whose parameter changed since it was fingerprinted (forgotten then)."""
        if not self.prints:
            return []
        found = []
        with torch.no_grad():
            for key, (buffer, was) in list(self.prints.items()):
                b = bits(buffer.param)
                if isinstance(was, torch.Tensor):
                    same = b.shape == was.shape and torch.equal(b, was)
                else:
                    same = checksum(b) == was
                if not same:
                    found.append(buffer)
                    self._drop(key)
        return found

    def forget(self, params: Iterable[int] | None = None) -> None:
        """Forget the fingerprints of these parameters' ids (of every one: None)."""
        for key in list(self.prints) if params is None else params:
            self._drop(key)

    def _drop(self, key: int) -> None:
        held = self.prints.pop(key, None)
        if held is not None and isinstance(held[1], torch.Tensor):
            self.copied -= held[1].numel()
