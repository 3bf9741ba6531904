"""What a Lab trains, as its scenario or spec builds it (``Built``), and the fresh copy of a
seeded template each new session's model is (``fresh_copy``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from app.spec.batches import Batches


@dataclass
class Built:
    model: nn.Module
    loss_fn: nn.Module
    batches: Batches
    points: torch.Tensor  # every training input, for the output view
    targets: torch.Tensor
    # torch's default generator right after the model was built (moons): dropout draws on
    rng: torch.Tensor | None = None
    # a spec's (app/spec/spec.py): the validation split (None without one), its task and
    # class names; the scenarios have none
    val_points: torch.Tensor | None = None
    val_targets: torch.Tensor | None = None
    task: str | None = None
    classes: list[str] | None = None


def fresh_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` with parameters and buffers of its own (new tensors, equal bit for
    bit: lines change them in place) and everything else shared as read-only.

    A new session's model is a fresh copy of one seeded template per setup (``moons_template``):
    building it again costs a ``torch.manual_seed`` (which also seeds every accelerator
    backend, with a stack trace each) and every layer's init, about ten times this copy, and
    ``copy.deepcopy`` costs about eight times it. Module attributes (hooks, flags) are copied
    one level deep, so ``train()``/``eval()`` on the copy leave the template alone.
    """
    new = object.__new__(type(module))
    state = {k: v.copy() if isinstance(v, dict | set) else v for k, v in module.__dict__.items()}
    state["_parameters"] = {
        k: None if p is None else nn.Parameter(p.detach().clone(), p.requires_grad)
        for k, p in module._parameters.items()
    }
    state["_buffers"] = {k: None if b is None else b.clone() for k, b in module._buffers.items()}
    state["_modules"] = {
        k: None if m is None else fresh_copy(m) for k, m in module._modules.items()
    }
    new.__dict__.update(state)
    return new
