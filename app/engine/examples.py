"""What a forward used, kept so that it can run again: the loss on the same batch after a step
(a prediction's truth), and every example's own share of a backward's gradient (an explanation).

A ``Forward`` is taken on a scratch Lab during a replay (app/log/timeline.py ``Timeline.scratch``),
never on a student's live one: it holds the parameter values the graph saved, the batch, the
mode and the dropout generator's state before the masks were drawn, so the same masks come out.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from app.engine.scenarios import HalfCurvatureLoss
from app.torchlock import TORCH_LOCK

if TYPE_CHECKING:
    from app.engine.lab import Lab


@dataclass
class Forward:
    """One ``out = model(X)``: the values it read, and (after it ran) the batch it drew."""

    params: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]
    rng: torch.Tensor | None  # the session's generator before the dropout masks were drawn
    training: bool
    x: torch.Tensor | None = None
    y: torch.Tensor | None = None
    share: float = 1.0

    @classmethod
    def before(cls, lab: Lab) -> Forward:
        return cls(
            params={n: p.detach().clone() for n, p in lab.named.items()},
            buffers={n: b.clone() for n, b in lab.buffers.items()},
            rng=lab.rng,  # never changed in place: a forward replaces it
            training=lab.model.training,
        )

    def ran(self, lab: Lab) -> None:
        self.x, self.y, self.share = lab.x, lab.y, lab.share


def _reduced(lab: Lab, loss: torch.Tensor, share: float) -> torch.Tensor:
    """The loss line's division for accumulation, exactly as ``Lab.loss`` writes it."""
    if lab.setup.accumulate > 1:
        k = lab.setup.accumulate
        return loss / k if share * k == 1 else loss * share
    return loss


def loss_again(lab: Lab, forward: Forward) -> float:
    """``forward`` then ``loss`` again on the same batch, mode and dropout masks, with the
    parameters the Lab holds now. Runs on a scratch Lab: BatchNorm in train mode updates its
    buffers there, as a real forward would."""
    assert forward.x is not None and forward.y is not None
    training, rng = lab.model.training, lab.rng
    lab.model.train(forward.training)
    lab.rng = forward.rng
    try:
        with lab.amp.autocast(), torch.no_grad():
            out = lab._model(forward.x)
            out = out.softmax(dim=1) if lab.setup.softmax_before_loss else out
            loss = _reduced(lab, lab.loss_fn(out, forward.y), forward.share)
        return float(loss.item())
    finally:
        lab.model.train(training)
        lab.rng = rng


def per_example(lab: Lab, out: torch.Tensor, y: torch.Tensor, share: float) -> torch.Tensor:
    """Each example's term of the loss, its reduction's weight included (1/n for a mean over
    n, the accumulation's 1/k): the terms add up to the loss line's value."""
    out = out.softmax(dim=1) if lab.setup.softmax_before_loss else out
    fn, n = lab.loss_fn, len(out)
    if isinstance(fn, nn.CrossEntropyLoss):
        terms = F.cross_entropy(out, y, reduction="none") / n
    elif isinstance(fn, nn.MSELoss):
        terms = ((out - y) ** 2).reshape(n, -1).sum(dim=1) / out.numel()
    elif isinstance(fn, HalfCurvatureLoss):
        terms = fn.curvature / 2 * ((out - y) ** 2).reshape(n, -1).sum(dim=1)
    else:  # a loss this module does not know how to split: no per-example answer
        raise TypeError(f"no per-example split for {type(fn).__name__}")
    return _reduced(lab, terms, share)


def contributions(
    lab: Lab, forward: Forward, name: str, index: int, scale: float | None
) -> list[float]:
    """Every example's contribution to element ``index`` of ``name``'s gradient through this
    forward's loss: d(its weighted term)/d(parameter), by ``torch.func`` on the parameter
    values, batch and dropout masks of that forward (times the GradScaler's ``scale``).

    The Jacobian of the per-example terms is taken through one forward of the whole batch, so
    the masks are those of that forward, and with BatchNorm in train mode (where an example's
    output depends on the batch's statistics) the terms still add up to the batch's gradient.
    """
    assert forward.x is not None and forward.y is not None
    model = copy.deepcopy(lab.model)
    model.train(forward.training)
    buffers = {n: b.clone() for n, b in forward.buffers.items()}
    if forward.training and buffers:
        # BatchNorm in train mode normalizes by the batch's statistics and updates its running
        # ones in place, which a transform must not do: the copy keeps the former only
        torch.func.replace_all_batch_norm_modules_(model)
        buffers = {}
    x, y, share = forward.x, forward.y, forward.share
    others = {n: p for n, p in forward.params.items() if n != name}

    def terms(param: torch.Tensor) -> torch.Tensor:
        with lab.amp.autocast():
            out = torch.func.functional_call(model, {**others, name: param, **buffers}, (x,))
            return per_example(lab, out, y, share)

    with TORCH_LOCK:  # torch's default generator is process-wide
        saved = torch.get_rng_state()
        if forward.rng is not None:
            torch.set_rng_state(forward.rng)
        try:
            jacobian = torch.func.jacrev(terms)(forward.params[name])
        finally:
            torch.set_rng_state(saved)
    rows = jacobian.reshape(len(x), -1)[:, index]
    if scale is not None:
        rows = rows * scale
    return [float(v) for v in rows.tolist()]


class Watch:
    """Follows the lines a replay runs on a scratch Lab: the newest forward, and the one whose
    output the newest loss line read (the graph a backward goes through)."""

    def __init__(self) -> None:
        self.forward: Forward | None = None
        self.of_loss: Forward | None = None
        self._pending: Forward | None = None

    def before(self, lab: Lab, line: str) -> None:
        self._pending = Forward.before(lab) if line == "forward" else None

    def after(self, lab: Lab, line: str, ok: bool) -> None:
        if line == "forward" and ok and self._pending is not None:
            self._pending.ran(lab)
            self.forward = self._pending
        elif line == "loss" and ok:
            self.of_loss = self.forward
        elif line == "resume" and ok:
            self.forward = self.of_loss = None  # a fresh model: the old graph is not its own
