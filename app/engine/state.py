"""What a Lab's state is made of, as plain data: LabState (everything but the autograd graph),
the error a line raises when it cannot run, and the stand-in for a loss whose graph is freed."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from app.engine import optimizers
from app.engine.views import CheckpointAt, LastView, LossPointView

if TYPE_CHECKING:
    from app.engine.lab import Lab

HISTORY_LIMIT = 1000  # loss points kept per session: bounds memory and response size


def spent_loss(value: float | None = None, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A loss whose graph backward has freed: a backward through it raises PyTorch's own
    "Trying to backward through the graph a second time" and touches no parameter. It holds
    the loss's value, in its dtype, for a ``running_loss`` line that reads it."""
    a = torch.tensor(1.0 if value is None else value, dtype=dtype, requires_grad=True)
    loss = a * torch.ones((), dtype=dtype, requires_grad=True)  # saves both: freed by backward
    loss.backward()  # type: ignore[no-untyped-call]
    return loss


class LineError(Exception):
    """A line that cannot run in the current state (the HTTP layer answers 409).

    ``torch_error`` is True when the message is PyTorch's own, raised by PyTorch.
    """

    def __init__(self, line: str, message: str, torch_error: bool = False) -> None:
        super().__init__(message)
        self.line, self.message, self.torch_error = line, message, torch_error


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


def capture(lab: Lab, *, history: bool = True) -> LabState:
    """Everything of ``lab`` but its graph, as copies (without the loss history when not
    ``history``: a keyframe's is rebuilt from the timeline's loss points)."""
    return LabState(
        params={n: p.detach().clone() for n, p in lab.named.items()},
        grads={n: None if p.grad is None else p.grad.clone() for n, p in lab.named.items()},
        optimizer=optimizers.capture(lab.optimizer, lab.named),
        batches=lab.batches.state(),
        cursor=lab.cursor,
        iteration=lab.iteration,
        steps=lab.steps,
        losses=lab.losses,
        loss=lab.loss_value,
        history=list(lab.history) if history else [],
        lr=lab.lr,
        max_norm=lab.max_norm,
        program=list(lab.program),
        last=None if lab.last is None else lab.last.copy(),
        loss_spent=lab.loss_tensor is not None and lab.loss_spent,
        loss_dtype=str(
            lab.dtype_of_params if lab.loss_tensor is None else lab.loss_tensor.dtype
        ).removeprefix("torch."),
        training=lab.model.training,
        buffers={n: b.clone() for n, b in lab.buffers.items()},
        scheduler=lab.schedule.capture(),
        running_loss=lab.running.capture(),
        kept=lab.running.kept,
        ckpt=lab.ckpt.held,  # never changed in place: resume loads copies of it
        ckpt_at=None if lab.ckpt.at is None else lab.ckpt.at.copy(),
        rng=None if lab.rng is None else lab.rng.clone(),
        scaler=lab.amp.capture(lab.optimizer),
        exact=lab.running.exact,
    )


def restore(lab: Lab, state: LabState, *, whole: bool = False) -> None:
    """Put the stores back as captured. lr, max_norm and the program stay as they are now,
    unless ``whole``: then they, the cursor and the last line are the captured ones too."""
    lr = lab.lr
    with torch.no_grad():
        for n, p in lab.named.items():
            p.copy_(state.params[n])
            grad = state.grads[n]
            p.grad = None if grad is None else grad.clone()
    optimizers.restore(lab.optimizer, lab.named, state.optimizer)
    with torch.no_grad():
        for n, b in state.buffers.items():
            lab.buffers[n].copy_(b)
    lab.model.train(state.training)
    lab.schedule.restore(state.scheduler)
    lab.running.restore(state.running_loss, state.kept)
    lab.ckpt.held = state.ckpt
    lab.ckpt.at = None if state.ckpt_at is None else state.ckpt_at.copy()
    lab.rng = None if state.rng is None else state.rng.clone()
    lab.amp.restore(state.scaler, lab.optimizer)
    lab.batches.restore(state.batches)
    if whole:
        lab.program = list(state.program)
        lab.max_norm = state.max_norm  # (and the program's lines described again)
        lab.describe_program()
        lab.cursor, lab.last = state.cursor, None if state.last is None else state.last.copy()
    else:
        lab.lr = lr
        lab.cursor = min(state.cursor, len(lab.program) - 1)
        lab.last = None
    lab.iteration, lab.steps, lab.loss_value = state.iteration, state.steps, state.loss
    lab.losses = state.losses
    lab.history = deque(state.history, maxlen=HISTORY_LIMIT)
    lab.out = lab.y = lab.x = None
    lab.autograd.start(None)  # no graph: none can be copied
    dtype = getattr(torch, state.loss_dtype, torch.float32)
    lab.loss_tensor = spent_loss(state.loss, dtype) if state.loss_spent else None
    lab.loss_spent = state.loss_spent
