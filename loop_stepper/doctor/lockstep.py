"""``--iterations N`` on every rank of a data-parallel job at once. The ranks' steps need not
match (``optimizer.step()`` under ``if rank == 0``), their backwards do (each DDP backward is an
all-reduce every rank runs), so a rank counts its backwards: after the N-th, it finishes that
iteration (its step, a logging all-reduce after it) and stops at the first thing of the next
one, before any collective of it — a clear, a backward, a module's forward (a global forward
pre-hook, put in then) — and no rank is left waiting for one that stopped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.nn.modules import module as module_hooks
from torch.utils.hooks import RemovableHandle

from loop_stepper.doctor.chart import Chart, Stopped


class Lockstep:
    always = True  # told at every iteration of a job's rank (chart.AWAKE)

    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.backwards = 0
        self.armed = False
        self.hook: RemovableHandle | None = None

    def close(self) -> None:
        if self.hook is not None:
            self.hook.remove()
            self.hook = None

    def _halt(self, *args: Any) -> None:
        if self.armed:
            self.close()
            raise Stopped(f"stopped after {self.backwards} backwards, on every rank")

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        self.backwards += 1
        limit = self.doctor.limit
        if limit is not None and self.backwards >= limit and not self.armed:
            self.armed = True
            self.hook = module_hooks.register_module_forward_pre_hook(self._halt)

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        self._halt()

    def zero_grad(self, owner: Any, set_to_none: bool) -> None:
        self._halt()
