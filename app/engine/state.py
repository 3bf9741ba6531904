"""What a Lab's state is made of, as plain data: LabState (everything but the autograd graph),
and the stand-in for a loss whose graph is freed. ``capture.py`` takes and puts it back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from app.engine.views import CheckpointAt, LastView, LossPointView


def spent_loss(value: float | None = None, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A loss whose graph backward has freed: a backward through it raises PyTorch's own
    "Trying to backward through the graph a second time" and touches no parameter. It holds
    the loss's value, in its dtype, for a ``running_loss`` line that reads it."""
    a = torch.tensor(1.0 if value is None else value, dtype=dtype, requires_grad=True)
    loss = a * torch.ones((), dtype=dtype, requires_grad=True)  # saves both: freed by backward
    loss.backward()  # type: ignore[no-untyped-call]
    return loss


@dataclass
class LabState:
    """Everything needed to put a Lab back where it was, except the autograd graph.

    A graph cannot be copied, so a restored Lab starts with no graph (as after reset). Only a
    loss whose graph backward has wholly freed is brought back, as a stand-in that fails the
    way it would (``loss_spent``): that is all a spent graph can still do.
    """

    params: dict[str, torch.Tensor]
    grads: dict[str, torch.Tensor | None]
    optimizer: dict[str, Any]
    batches: dict[str, Any]
    cursor: int = 0
    iteration: int = 0
    steps: int = 0
    losses: int = 0
    loss: float | None = None
    history: list[LossPointView] = field(default_factory=list)
    lr: float = 0.0
    max_norm: float = 1.0
    program: list[str] = field(default_factory=list)
    last: LastView | None = None
    loss_spent: bool = False
    loss_dtype: str = "float64"
    training: bool = True
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)
    scheduler: dict[str, Any] | None = None  # its state_dict, and whether step ran (warning)
    running_loss: float | torch.Tensor = 0.0
    kept: int = 0  # graphs a tensor running_loss held
    ckpt: dict[str, Any] | None = None
    ckpt_at: CheckpointAt | None = None
    scaler: dict[str, Any] | None = None  # the GradScaler's scale, tracker, stage (amp float16)
    rng: torch.Tensor | None = None  # the session's own torch generator state (dropout)
    # False when running_loss is a tensor holding graphs: a restore cannot bring those back
    exact: bool = True
