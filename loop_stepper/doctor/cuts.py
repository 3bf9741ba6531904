"""Where the loss went when a step found none of its optimizer's parameters with a gradient,
read from the user's names at that step (only then: a loop whose parameters get their
gradients never pays for it):

- a tensor made anew from the forward's numbers with ``requires_grad=True``
  (``torch.tensor(out.detach().numpy(), requires_grad=True)``, ``Variable(out.data,
  requires_grad=True)``, ``out.detach().requires_grad_()``), a leaf whose own ``.grad`` the
  backward filled: the graph was cut where it was made (``no_gradient``, named at that
  statement);
- a module whose parameters got the gradients and no optimizer holds them: a copy of the model
  (``copy.deepcopy``: the same numbers; the loss ran the copy, ``no_gradient`` named at the
  statement that stored it) or another model (other numbers: the optimizer was given the wrong
  model, ``optimizer_wrong_model`` at the optimizer's line).
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn

from loop_stepper.doctor import graphs
from loop_stepper.doctor.holders import Keeper
from loop_stepper.doctor.lookout import fallback
from loop_stepper.doctor.where import Place


@dataclass(frozen=True)
class Went:
    name: str  # the user's name of what the loss reached instead
    at: Place  # the statement that stored it
    module: nn.Module | None  # a module (a copy, another model), else a tensor made anew


def went(frames: Iterable[types.FrameType], held: set[int]) -> Went | None:
    """What the loss reached instead of the ``held`` parameters: a leaf made anew or a module,
    each with a gradient no optimizer holds."""
    seen: set[int] = set()
    for frame, name, value in graphs.scopes(frames):
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            if _made_anew(value, held):
                return Went(name, _stored(frame, name), None)
        elif isinstance(value, nn.Module) and any(
            p.grad is not None and id(p) not in held for p in value.parameters()
        ):
            return Went(name, _stored(frame, name), value)
    return None


def holder(frames: Iterable[types.FrameType], params: Iterable[torch.Tensor]) -> str:
    """What holds all of ``params``: the user's name of a module (in eval mode, said so), else
    a model no name of theirs holds any more."""
    wanted = {id(p) for p in params}
    for _, name, value in graphs.scopes(frames):
        if isinstance(value, nn.Module) and _holds(value, wanted):
            return name if value.training else f"{name} (in eval mode)"
    return "a model no name of yours holds any more (made again since)"


def copied(module: nn.Module, params: list[torch.Tensor]) -> bool:
    """Whether ``module``'s parameters are ``params``' numbers: a copy (``copy.deepcopy``)."""
    mine = list(module.parameters())
    if len(mine) != len(params):
        return False
    with torch.no_grad():
        pairs = zip(mine, params, strict=True)
        return all(
            type(a) is type(b) and a.shape == b.shape and torch.equal(a, b) for a, b in pairs
        )


def _holds(module: nn.Module, wanted: set[int]) -> bool:
    return wanted <= {id(p) for p in module.parameters()}


def _made_anew(t: torch.Tensor, held: set[int]) -> bool:
    return (
        not isinstance(t, nn.Parameter)
        and t.is_leaf
        and t.requires_grad
        and t.grad is not None
        and id(t) not in held
    )


def _stored(frame: types.FrameType, name: str) -> Place:
    """The statement of ``frame``'s code storing ``name`` nearest the line it runs."""
    return fallback(Keeper(name, (frame.f_code, name), lambda: None, frame))
