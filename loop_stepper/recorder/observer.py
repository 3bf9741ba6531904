"""What a probe tells (``probe.py``): one method per thing a training loop does to PyTorch, each
doing nothing unless an observer (the recorder, the doctor) says otherwise; ``EVENTS`` names
them. An observer that ``failed`` (an error of its own in a hook) is ``off`` and told nothing
more."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

__all__ = ["EVENTS", "Observer"]


class Observer:
    """What a probe tells; each method does nothing unless an observer says otherwise. An
    observer that ``failed`` (``off``) is told nothing more."""

    off = False

    def failed(self, hook: str, error: Exception) -> None:
        """``hook`` raised ``error``, an internal error of the observer's own: it stops
        observing; the user's code runs on."""
        self.off = True

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None: ...

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None: ...

    def failed_backward(self, roots: Sequence[torch.Tensor], error: BaseException) -> None: ...

    def before_step(self, optimizer: torch.optim.Optimizer) -> None: ...

    def after_step(self, optimizer: torch.optim.Optimizer) -> None: ...

    def zero_grad(self, owner: torch.optim.Optimizer | nn.Module, set_to_none: bool) -> None: ...

    def clip(self, parameters: list[torch.Tensor], how: str) -> None: ...

    def clipped(self, parameters: list[torch.Tensor], how: str) -> None:
        """The clip ran (``clip`` is told before)."""

    def scheduler_step(self, scheduler: Any) -> None: ...

    def loss_input(self, how: str, logits: torch.Tensor) -> None: ...

    def grad_mode(self, enabled: bool) -> None:
        """A ``torch.no_grad()`` or ``torch.inference_mode()`` block was entered (False) or
        left (the grad mode now)."""

    def dropout(self, p: float, training: bool) -> None:
        """``F.dropout`` is called (``nn.Dropout`` passes its module's mode; a call of the
        user's own may not)."""

    def data_read(self, tensor: torch.Tensor, data: torch.Tensor) -> None:
        """``tensor.data`` was read (``data``) of a leaf that requires grad, a parameter."""

    def batch(self, data: Any) -> None:
        """A ``DataLoader`` gave a batch."""

    def sampler_order(self, sampler: Any, indices: list[int]) -> None:
        """A ``DistributedSampler`` gave this rank's order of an epoch."""

    def ddp_forward(self, module: nn.Module, synced: bool) -> None:
        """A ``DistributedDataParallel`` forward; ``synced``: its backward will all-reduce (not
        inside ``no_sync()``, autograd on)."""

    def optimizer_made(self, optimizer: torch.optim.Optimizer) -> None: ...

    def state_loaded(self, owner: torch.optim.Optimizer | nn.Module) -> None: ...

    def state_saved(self, optimizer: torch.optim.Optimizer) -> None: ...

    def checkpoint_loaded(self, loaded: Any) -> None: ...

    def checkpoint_saved(self, saved: Any) -> None:
        """``torch.save(saved, …)`` is about to write."""

    def mode_set(self, module: nn.Module, training: bool) -> None: ...

    def autocast(self, dtype: torch.dtype, enabled: bool) -> None: ...

    def scaled(self, scaled: Any) -> None: ...

    def scaler_step(self, optimizer: torch.optim.Optimizer, before: bool) -> None: ...

    def closure_step(self, optimizer: torch.optim.Optimizer, before: bool) -> None:
        """``optimizer.step(closure)`` begins or ends: the closure's own clears and backwards
        run inside it (LBFGS)."""


EVENTS = tuple(
    n for n, v in vars(Observer).items() if callable(v) and n[0] != "_" and n != "failed"
)
