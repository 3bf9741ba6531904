"""The state around the loop: an optimizer's state lost (a resume without it, a new optimizer
every epoch), the first number that stopped being finite.

A resume is a model restored where an optimizer's state exists that the restore could have
brought back: in a checkpoint ``torch.load`` gave (written by this process or another), or in
this process's own stateful optimizer that trained those weights. If a stateful optimizer then
steps from no state, that state was left unloaded (``resume_without_optimizer``).

Loading pretrained weights alone for fine-tuning is not a resume: a file of weights from
another process holds no optimizer's state (never named), and in the process that trained them
a fine-tune trains parameters the restore did not give (a new head): only an optimizer over
restored parameters alone, with the checkpoint's state lost, is named.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.doctor.chart import Chart, Optim
from loop_stepper.doctor.shards import local
from loop_stepper.doctor.where import Place


class State:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.resume: Place | None = None  # a model's weights restored here, its optimizer not
        self.checkpoint_state = False  # a torch.load gave an optimizer's state
        self.had_state = False  # an optimizer's step here left state (momentum, Adam)
        self.restored: set[int] = set()  # the parameters the resume restored

    def close(self) -> None: ...

    # -- the optimizer's state -------------------------------------------------------------

    def optimizer_made(self, optimizer: torch.optim.Optimizer) -> None:
        doctor = self.doctor
        at = doctor.place()
        new = doctor.optimizer(optimizer, at)
        for old in list(doctor.optimizers.values()):
            if old is new or not (old.params & new.params) or not old.optimizer.state:
                continue
            if old.made_at == at:  # the same line again, over the same parameters
                evidence = {"optimizer": new.kind, "lost": _state_steps(old.optimizer)}
                doctor.name("optimizer_recreated", at, evidence)
            break

    def state_loaded(self, owner: torch.optim.Optimizer | nn.Module) -> None:
        if isinstance(owner, nn.Module):
            if self.checkpoint_state or self.had_state:
                self.resume = self.doctor.place()
                self.restored = {id(p) for p in owner.parameters()}
        elif owner.state:
            self.resume = None  # the optimizer's state came back

    def checkpoint_loaded(self, loaded: Any) -> None:
        values = list(loaded.values()) if isinstance(loaded, dict) else []
        for value in [loaded, *values]:
            if isinstance(value, dict) and {"state", "param_groups"} <= set(value):
                self.checkpoint_state = self.checkpoint_state or bool(value["state"])

    def before_step(self, optimizer: torch.optim.Optimizer) -> None:
        o = self.doctor.optimizer(optimizer)
        if self.resume is not None:
            if optimizer.state:
                self.resume = None
            else:
                o.fresh_after_resume = True
        # a scaler's inf is by design; the loss is read at every backward, the gradients (a sum
        # of every .grad: most of the doctor's cost on a big model) at the sampled steps
        doctor = self.doctor
        if doctor.finite and not doctor.scaler_used and doctor.sampled():
            self._finite_grads(o)

    def after_step(self, optimizer: torch.optim.Optimizer) -> None:
        doctor = self.doctor
        o = doctor.optimizer(optimizer)
        resumed = self.checkpoint_state or o.params <= self.restored  # else a fine-tune
        if optimizer.state and o.fresh_after_resume and self.resume is not None and resumed:
            doctor.name("resume_without_optimizer", self.resume, {"optimizer": o.kind})
        if optimizer.state:
            self.had_state = True
            if o.fresh_after_resume:
                self.resume = None
        o.fresh_after_resume = False
        if doctor.finite and doctor.sampled() and doctor.primary in (None, id(optimizer)):
            self._finite_params(optimizer)

    # -- finiteness ------------------------------------------------------------------------

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        doctor = self.doctor
        for r in roots:
            if doctor.finite and r.grad_fn is not None and r.numel() == 1:
                v = _value(r)
                if not math.isfinite(v):
                    doctor.finite = False
                    doctor.name("nonfinite", doctor.backward_at, {"store": "loss", "value": v})

    def _finite_grads(self, o: Optim) -> None:
        grads = [p for p in o.tensors() if p.grad is not None]
        bad = _first_nonfinite([(p, p.grad) for p in grads if p.grad is not None])
        if bad is not None:
            p, v = bad
            name = self.doctor.names([p])[0]
            self.doctor.finite = False
            evidence = {"store": ".grad", "value": v, "where": f" in {name}.grad"}
            self.doctor.name("nonfinite", self.doctor.backward_at, evidence)

    def _finite_params(self, optimizer: torch.optim.Optimizer) -> None:
        params = [p for g in optimizer.param_groups for p in g["params"]]
        bad = _first_nonfinite([(p, p) for p in params])
        if bad is not None:
            p, v = bad
            name = self.doctor.names([p])[0]
            self.doctor.finite = False
            evidence = {"store": "parameter", "value": v, "where": f" in {name}"}
            self.doctor.name("nonfinite", self.doctor.place(), evidence)


def _first_nonfinite(
    pairs: list[tuple[torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, float] | None:
    """The first tensor holding a NaN or an infinity, and that number. One sum of each tends
    to it (a NaN or an infinity stays in a sum); only a sum that is not finite is checked
    element by element (a sum of large finite numbers may overflow)."""
    with torch.no_grad():
        pairs = [(owner, local(t)) for owner, t in pairs]
        if not pairs or math.isfinite(sum(float(t.sum()) for _, t in pairs)):
            return None
        for owner, t in pairs:
            finite = torch.isfinite(t)
            if not bool(finite.all()):
                return owner, float(t[~finite].reshape(-1)[0])
    return None


def _value(t: torch.Tensor) -> float:
    return t.item() if t.numel() == 1 else float(t.detach().reshape(-1)[0])


def _state_steps(optimizer: torch.optim.Optimizer) -> str:
    for state in optimizer.state.values():
        step = state.get("step")
        if step is not None:
            return f"{int(step)} steps of state"
        return ", ".join(sorted(state))
    return "its state"
