"""The train/eval mode as a forward's numbers follow it: ``F.dropout(x, p)`` called with its
default ``training=True`` inside the forward of a module the loop put in eval mode keeps
dropping (``dropout_in_eval``). The module is the innermost one of the user's frames running
the call (its ``self``); ``nn.Dropout`` passes its own mode and is never named."""

from __future__ import annotations

from torch import nn

from loop_stepper.doctor import where
from loop_stepper.doctor.chart import Chart


class Modes:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor

    def close(self) -> None: ...

    def dropout(self, p: float, training: bool) -> None:
        if not training or not p:
            return
        module = _calling_module()
        if module is not None and not module.training:
            evidence = {"module": type(module).__name__, "p": p, "training": True}
            self.doctor.name("dropout_in_eval", self.doctor.place(), evidence)


def _calling_module() -> nn.Module | None:
    """The module whose forward (a frame of the user's code) made the call, innermost."""
    for frame in where.their_frames(1):
        owner = frame.f_locals.get("self")
        if isinstance(owner, nn.Module):
            return owner
    return None
