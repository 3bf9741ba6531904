"""Forward passes made in eval mode while autograd records: heard by PyTorch's global forward
hooks, installed only while some module is in eval mode (a loop that never calls ``eval()``
pays nothing for them), removed when every module is back in training mode or the doctor
closes.

Each outermost such forward that builds a graph is kept until the next backward: reached by
it, it was a training forward in eval mode (a bug where the mode changes the numbers:
``eval_while_training``); not reached, a validation pass that built a graph for nothing
(``validation_with_grad``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.utils.hooks import RemovableHandle

from loop_stepper.doctor.where import Place

KEPT = 4  # eval forwards kept between two backwards (each holds its graph until then)
_reads: dict[type, bool] = {}


def reads_training(cls: type) -> bool:
    """Whether a module class's forward reads ``self.training`` (dropout, batch norm, the
    user's own): the mode changes its numbers."""
    known = _reads.get(cls)
    if known is None:
        forward = getattr(cls, "forward", None)
        code = getattr(forward, "__code__", None)
        known = _reads[cls] = code is not None and "training" in code.co_names
    return known


def in_eval(module: nn.Module) -> list[str]:
    """The parts of ``module`` in eval mode whose numbers the mode changes."""
    return [
        f"{name or type(module).__name__} ({type(m).__name__})"
        for name, m in module.named_modules()
        if not m.training and reads_training(type(m))
    ]


@dataclass(eq=False)
class EvalForward:
    fn: Any  # the output's grad_fn (held: the graph lives until the next backward)
    where: Place
    module: nn.Module
    shape: list[int]


class Evals:
    def __init__(self, place: Callable[[], Place]) -> None:
        self.place = place
        self.modules: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        self.handles: list[RemovableHandle] = []
        self.depth = 0
        self.pending: list[EvalForward] = []

    def mode(self, module: nn.Module, training: bool) -> None:
        if training:
            self.modules.discard(module)
        else:
            self.modules.add(module)
        if len(self.modules) and not self.handles:
            self.handles = [
                module_hooks.register_module_forward_pre_hook(self._pre),
                _post_hook(self._post),
            ]
        elif not len(self.modules) and self.handles:
            self.remove()

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles, self.depth = [], 0

    def take(self) -> list[EvalForward]:
        pending, self.pending = self.pending, []
        return pending

    def _pre(self, module: nn.Module, args: Any) -> None:
        self.depth += 1

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth or module.training or not torch.is_grad_enabled():
            return
        out = _tensor(output)
        if out is None or out.grad_fn is None or len(self.pending) >= KEPT:
            return
        self.pending.append(EvalForward(out.grad_fn, self.place(), module, list(out.shape)))


def _post_hook(hook: Callable[..., None]) -> RemovableHandle:
    try:  # always_call: a forward that raises still closes its depth
        return module_hooks.register_module_forward_hook(hook, always_call=True)
    except TypeError:  # torch before 2.1
        return module_hooks.register_module_forward_hook(hook)


def _tensor(output: Any) -> torch.Tensor | None:
    if isinstance(output, torch.Tensor):
        return output
    values = output.values() if isinstance(output, dict) else output
    if isinstance(values, list | tuple) or isinstance(output, dict):
        for value in values:
            if isinstance(value, torch.Tensor):
                return value
    return None
