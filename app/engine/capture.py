"""A Lab's state taken (``capture``) and put back (``restore``) exactly, all but the graph."""

from __future__ import annotations

from collections import deque

import torch

from app.engine import optimizers
from app.engine.parts import HISTORY_LIMIT, Parts
from app.engine.state import LabState, spent_loss


def capture(lab: Parts, *, history: bool = True) -> LabState:
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


def restore(lab: Parts, state: LabState, *, whole: bool = False) -> None:
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
