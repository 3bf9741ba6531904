"""The rest of the real loop's stores (issue 10), each a small object the Lab delegates to.

Clipping's measure, the scheduler (the lr store), ``running_loss`` and the checkpoint ``ckpt``:
the Lab keeps one method per loop line; these hold what those lines read and write, describe it
for the Session and capture or restore it for the timeline.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import torch

from app.engine.errors import LineError
from app.engine.optimizers import OptimizerSpec, SchedulerSpec
from app.engine.views import CheckpointAt, CheckpointView, RunningLossView, SchedulerView
from loop_stepper.stores.graph import kept


def clip(params: Iterable[torch.nn.Parameter], max_norm: float) -> tuple[float, bool]:
    """``clip_grad_norm_``: the total norm it measured, and whether it scaled every .grad.
    With every .grad None it measures 0 and touches nothing."""
    params = list(params)
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm=max_norm)
    any_grad = any(p.grad is not None for p in params)
    # the factor clip_grad_norm_ multiplies by, computed as it does (in the norm's dtype)
    scaled = any_grad and bool(max_norm / (norm + 1e-6) < 1)
    return norm.item(), scaled


class Schedule:
    """The lr scheduler, if the session has one: it owns the optimizer's lr."""

    def __init__(self, spec: SchedulerSpec | None, optimizer: torch.optim.Optimizer) -> None:
        self.spec, self.optimizer = spec, optimizer
        self.scheduler = None if spec is None else spec.make(optimizer)

    def step(self) -> None:
        if self.scheduler is None:
            raise LineError(
                "scheduler_step",
                "scheduler.step() needs a scheduler: create the session with one "
                '(e.g. "scheduler": {"kind": "step", "step_size": 1, "gamma": 0.5})',
            )
        self.scheduler.step()

    def capture(self) -> dict[str, Any] | None:
        """Its state_dict, and whether optimizer.step ran (PyTorch's order warning reads it)."""
        if self.scheduler is None:
            return None
        return {
            "state": copy.deepcopy(self.scheduler.state_dict()),
            "opt_called": bool(getattr(self.optimizer, "_opt_called", False)),
        }

    def restore(self, saved: dict[str, Any] | None) -> None:
        if self.scheduler is not None and saved is not None:
            self.scheduler.load_state_dict(copy.deepcopy(saved["state"]))
            self.optimizer._opt_called = saved["opt_called"]  # type: ignore[attr-defined]

    def describe(self) -> SchedulerView | None:
        return None if self.spec is None else self.spec.describe()


class Running:
    """``running_loss``: a Python float (``+= loss.item()``), or a tensor (``+= loss``) that
    keeps every loss graph added into it alive."""

    def __init__(self) -> None:
        self.value: float | torch.Tensor = 0.0
        self.kept = 0  # loss graphs a tensor running_loss holds

    def add_item(self, loss: torch.Tensor) -> None:
        running = self.value
        running += loss.item()
        self.value = running

    def add_tensor(self, loss: torch.Tensor) -> None:
        running = self.value
        running += loss
        self.value = running
        self.kept += loss.requires_grad

    @property
    def exact(self) -> bool:
        """False when it is a tensor holding graphs: a restore cannot bring those back."""
        return not isinstance(self.value, torch.Tensor)

    def capture(self) -> float | torch.Tensor:
        value = self.value
        return value.detach().clone() if isinstance(value, torch.Tensor) else value

    def restore(self, value: float | torch.Tensor, graphs: int) -> None:
        self.value = value.clone() if isinstance(value, torch.Tensor) else value
        self.kept = graphs

    def describe(self) -> RunningLossView:
        """Its value, and for a tensor the graphs, nodes and saved bytes it keeps alive."""
        running = self.value
        if not isinstance(running, torch.Tensor):
            return {"value": running, "tensor": False, "graphs": 0, "nodes": 0, "saved_bytes": 0}
        nodes, saved = kept(running)
        return {
            "value": running.item(),
            "tensor": True,
            "graphs": self.kept,
            "nodes": nodes,
            "saved_bytes": saved,
        }


class Checkpoint:
    """``ckpt``: what ``checkpoint`` saved and when; ``resume`` loads it into a fresh model and
    optimizer. Held as copies, as ``torch.save`` then ``torch.load`` would give them."""

    def __init__(self) -> None:
        self.held: dict[str, Any] | None = None
        self.at: CheckpointAt | None = None

    def take(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        model_only: bool,
        iteration: int,
        steps: int,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """A bare ``state_dict()`` shares the live tensors, which the next step changes: copy.
        ``extra`` holds more state dicts to save (the GradScaler's)."""
        ckpt: dict[str, Any] = {
            "model": {k: v.detach().clone() for k, v in model.state_dict().items()}
        }
        if not model_only:
            ckpt["optimizer"] = copy.deepcopy(optimizer.state_dict())
            ckpt.update(copy.deepcopy(extra or {}))
        self.held = ckpt
        self.at = {"iteration": iteration, "steps": steps}

    def resume(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        fresh: OptimizerSpec,
        lr: float,
    ) -> dict[str, Any]:
        """Make ``model`` and ``optimizer`` fresh (new parameter tensors with .grad None, train
        mode, no optimizer state, the creation lr: what new ones are), then load what the
        checkpoint holds. Returns the checkpoint, for the other state dicts it holds."""
        if self.held is None:
            raise LineError("resume", "resume needs a checkpoint: run checkpoint first")
        new_parameters(model, optimizer)
        model.load_state_dict(self.held["model"])
        model.train()
        optimizer.load_state_dict(fresh.make(model.parameters(), lr).state_dict())
        if "optimizer" in self.held:  # a copy: Adam's step writes its state in place
            optimizer.load_state_dict(copy.deepcopy(self.held["optimizer"]))
        return self.held

    def describe(self) -> CheckpointView | None:
        if self.held is None or self.at is None:
            return None
        return {"keys": list(self.held), **self.at}


def new_parameters(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """New parameter tensors in ``model`` and ``optimizer``, as a restarted job's new model has:
    a graph built before backpropagates into the old ones (in PyTorch it reaches the old model),
    and load_state_dict's in-place copy does not bump the versions that graph saved."""
    new: dict[int, torch.nn.Parameter] = {}
    for module in model.modules():
        for name, p in list(module.named_parameters(recurse=False)):
            new[id(p)] = torch.nn.Parameter(p.detach().clone(), p.requires_grad)
            setattr(module, name, new[id(p)])
    for group in optimizer.param_groups:
        group["params"] = [new[id(p)] for p in group["params"]]
    optimizer.state.clear()  # keyed by the old tensors; resume loads it afresh
