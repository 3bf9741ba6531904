"""The order of the loop's calls, read from each ``.grad`` buffer (``ledger.py``): a backward
onto a used gradient that a step then reads, a step before any backward, a clear between
backward and step, a clear of gradients no step used, clipping at the wrong moment, the
scheduler before the optimizer, a backward PyTorch refuses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.doctor.chart import Chart, Optim
from loop_stepper.doctor.ledger import GradBuffer, mark
from loop_stepper.doctor.where import Place


class Order:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.ledger = doctor.ledger
        self.clips: dict[Place, str] = {}  # a clip's line: its first verdict stands

    def close(self) -> None: ...

    def closure_step(self, optimizer: torch.optim.Optimizer, before: bool) -> None:
        """``step(closure)`` clears and backpropagates inside the step, and reads what its own
        closure wrote: no order to check; after it, its gradients are used."""
        if not before:
            for b in self.ledger.track(p for g in optimizer.param_groups for p in g["params"]):
                b.mark, b.cleared = mark(b.param), None
                b.state = "empty" if b.mark is None else "used"

    @property
    def inside_closure(self) -> bool:
        return self.doctor.closure_stepping is not None

    # -- backward ----------------------------------------------------------------------

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        if self.inside_closure:
            return
        self.ledger.before_backward(self.doctor.backward_at)

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        if self.inside_closure:
            return
        doctor = self.doctor
        reset = self.ledger.after_backward(doctor.backward_at, doctor.backward_iteration)
        if reset:
            cleared = reset[0].cleared
            assert cleared is not None
            params = doctor.names(b.param for b in reset)
            doctor.name("accumulation_reset", cleared, {"params": params})
            for buffer in reset:
                buffer.cleared = None

    def failed_backward(self, roots: Sequence[torch.Tensor], error: BaseException) -> None:
        said, doctor = str(error), self.doctor
        if "backward through the graph a second time" in said:
            doctor.name("backward_twice", doctor.place(), {"error": said})
        elif "does not require grad and does not have a grad_fn" in said:
            evidence = {"params": "any parameter", "error": f" ({said})"}
            doctor.name("no_gradient", doctor.place(), evidence)

    # -- step ----------------------------------------------------------------------------

    def before_step(self, optimizer: torch.optim.Optimizer) -> None:
        """What the step about to run reads from each .grad."""
        if self.inside_closure:
            return
        doctor = self.doctor
        o, at = doctor.optimizer(optimizer), doctor.place()
        buffers = self.ledger.track(p for g in optimizer.param_groups for p in g["params"])
        read: dict[str, list[GradBuffer]] = {
            k: [] for k in ("stale", "first", "again", "cleared", "zeros", "never")
        }
        for b in buffers:
            self.ledger.sync(b, at)
            if b.state == "stale":
                read["stale"].append(b)
                b.state = "used"
            elif b.state == "fresh":
                b.state = "used"
            elif b.state == "used":
                if o.backwards_since == 0:
                    read["again"].append(b)
            elif b.cleared is not None:
                read["zeros" if b.cleared_to_zeros else "cleared"].append(b)
            elif not b.written and doctor.backwards == 0 and o.steps == 0:
                read["first"].append(b)
            elif not b.written and o.backwards_since > 0 and b.param.requires_grad:
                read["never"].append(b)
        self._name(o, at, read)

    def _name(self, o: Optim, at: Place, read: dict[str, list[GradBuffer]]) -> None:
        doctor = self.doctor
        if read["stale"]:
            b = read["stale"][0]
            assert b.stale is not None
            made_at, it = b.stale
            evidence: dict[str, Any] = {"param": doctor.names([b.param])[0], **b.stale_numbers}
            doctor.name("skip_zero_grad", made_at, evidence, it)
        if read["first"] or read["again"]:
            first = bool(read["first"])
            said = "None" if first else "the gradient an earlier step() had already used"
            moved = "moved nothing" if first else "moved the weights by it again"
            doctor.name("step_first", at, {"read": said, "moved": moved, "grad": said})
            o.stepped_first = True
        if read["cleared"] and not o.stepped_first:
            doctor.name("zero_grad_before_step", read["cleared"][0].cleared or at, {"grad": "None"})
        if read["zeros"] and not o.stepped_first:
            moves = _moves_without_gradient(o.optimizer)
            moved = (
                ": momentum or weight decay still moved the weights"
                if moves
                else ": plain SGD moved nothing"
            )
            evidence = {"grad": "zeros", "moved": moved, "momentum_or_decay": moves}
            doctor.name("zeros", read["zeros"][0].cleared or at, evidence)
        for b in read["cleared"] + read["zeros"]:
            b.cleared = None
        if read["never"]:
            o.without_gradient += 1
            if o.without_gradient >= 2:
                params = doctor.names(b.param for b in read["never"])
                doctor.name("no_gradient", doctor.backward_at, {"params": params})

    # -- the other calls -------------------------------------------------------------------

    def zero_grad(self, owner: torch.optim.Optimizer | nn.Module, set_to_none: bool) -> None:
        if self.inside_closure:
            return
        at = self.doctor.place()
        if isinstance(owner, torch.optim.Optimizer):
            self.doctor.optimizer(owner)
            params: Iterable[torch.Tensor] = (p for g in owner.param_groups for p in g["params"])
        else:
            params = owner.parameters()
        for b in self.ledger.track(params):
            self.ledger.sync(b, at, zeroed=True)

    def clip(self, parameters: list[torch.Tensor], how: str) -> None:
        if self.inside_closure:
            return
        doctor = self.doctor
        at = doctor.place()
        buffers = self.ledger.track(p for p in parameters if p.requires_grad)
        for b in buffers:
            self.ledger.sync(b, at)
        if at in self.clips or not buffers:
            return
        states = {b.state for b in buffers}
        if states <= {"empty"} or "stale" in states:
            empty = all(b.param.grad is None for b in buffers)
            read = "every .grad was None" if empty else "the stale buffers of the last iteration"
            self.clips[at] = "clip_before_backward"
            doctor.name("clip_before_backward", at, {"read": read, "how": how})
        elif "used" in states:
            self.clips[at] = "clip_after_step"
            doctor.name("clip_after_step", at, {"how": how, "grad": "already used by a step"})
        else:
            self.clips[at] = "ok"

    def scheduler_step(self, scheduler: Any) -> None:
        optimizer = getattr(scheduler, "optimizer", None)
        if not isinstance(optimizer, torch.optim.Optimizer):
            return
        called = getattr(optimizer, "_opt_called", None)
        o = self.doctor.optimizers.get(id(optimizer))
        never = called is False if called is not None else (o is None or o.steps == 0)
        if never:
            lr = optimizer.param_groups[0].get("lr")
            evidence = {"lr": lr, "optimizer_steps": 0}
            self.doctor.name("scheduler_before_step", self.doctor.place(), evidence)


def _moves_without_gradient(optimizer: torch.optim.Optimizer) -> bool:
    """Whether a step moves a parameter whose .grad is zeros (momentum, weight decay, Adam)."""
    if not isinstance(optimizer, torch.optim.SGD):
        return True
    return any(g.get("momentum", 0) or g.get("weight_decay", 0) for g in optimizer.param_groups)
