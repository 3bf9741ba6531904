"""Forward passes made in eval mode while autograd records: heard by PyTorch's global forward
hooks, installed only while some module is in eval mode (a loop that never calls ``eval()``
pays nothing for them), removed when every module is back in training mode or the doctor
closes.

Each outermost such forward that builds a graph is kept until the next backward: reached by
it, it was a training forward in eval mode (a bug only where the mode changes that forward's
numbers: ``eval_while_training``); not reached, a validation pass that built a graph for
nothing (``validation_with_grad``), named at the validation code's own line: the line of the
function that called ``eval()``, still running, rather than a helper the training shares
(``def infer(self, x): return self.module(x)``).
"""

from __future__ import annotations

import sys
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.nn.modules.batchnorm import _NormBase
from torch.nn.modules.dropout import _DropoutNd
from torch.utils.hooks import RemovableHandle

from loop_stepper.doctor import where
from loop_stepper.doctor.where import Place
from loop_stepper.recorder.observer import Observer
from loop_stepper.recorder.probe import guarded

KEPT = 4  # eval forwards kept between two backwards (each holds its graph until then)
_reads: dict[type, bool] = {}


def reads_training(cls: type) -> bool:
    """Whether a module class's forward reads ``self.training`` (the user's own modules)."""
    known = _reads.get(cls)
    if known is None:
        forward = getattr(cls, "forward", None)
        code = getattr(forward, "__code__", None)
        known = _reads[cls] = code is not None and "training" in code.co_names
    return known


def mode_changes(m: nn.Module) -> bool:
    """Whether eval mode changes the numbers of ``m``'s own forward, by its type and settings:
    dropout with p > 0, a norm layer tracking running statistics (eval reads them instead of
    the batch's), a stacked RNN with dropout between its layers, attention with dropout,
    RReLU's random slope; a module of the user's own whose forward reads ``self.training``.
    PyTorch's other modules and a library's (``transformers``: ``self.training`` read for
    gradient checkpointing) do the same in both modes, but for their dropouts and norms."""
    if isinstance(m, _DropoutNd):
        return m.p > 0
    if isinstance(m, _NormBase):
        return bool(m.track_running_stats) and m.running_mean is not None
    if isinstance(m, nn.RNNBase):
        return m.dropout > 0 and m.num_layers > 1
    if isinstance(m, nn.MultiheadAttention):
        return float(m.dropout) > 0
    if isinstance(m, nn.RReLU):
        return True
    return _theirs(type(m)) and reads_training(type(m))


def _theirs(cls: type) -> bool:
    """A class of the user's own files (not PyTorch's, not an installed library's: their
    dropouts and norms are modules of their own, looked at one by one)."""
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    return cls.__module__ == "__main__" or (filename is not None and where.is_theirs(filename))


def in_eval(module: nn.Module) -> list[str]:
    """The parts of ``module`` in eval mode whose numbers the mode changes."""
    return [
        f"{name or type(module).__name__} ({type(m).__name__})"
        for name, m in module.named_modules()
        if not m.training and mode_changes(m)
    ]


@dataclass(eq=False)
class EvalForward:
    fn: Any  # the output's grad_fn (held: the graph lives until the next backward)
    where: Place
    module: nn.Module
    shape: list[int]
    modes: list[str]  # its parts in eval mode whose numbers the mode changes, as it ran


class Evals:
    def __init__(self, owner: Observer, place: Callable[[], Place]) -> None:
        self.owner, self.place = owner, place
        self.modules: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        self.handles: list[RemovableHandle] = []
        self.depth = 0
        self.pending: list[EvalForward] = []
        self.callers: dict[int, types.CodeType] = {}  # the user's frames that called eval()

    def mode(self, module: nn.Module, training: bool) -> None:
        if training:
            self.modules.discard(module)
        else:
            self.modules.add(module)
            self._called_eval()
        if len(self.modules) and not self.handles:
            self.handles = [
                module_hooks.register_module_forward_pre_hook(
                    guarded(self.owner, "forward_pre", self._pre)
                ),
                _post_hook(guarded(self.owner, "forward", self._post)),
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
        # the modes read now: a train() between this forward and the backward is too late
        modes = in_eval(module)
        forward = EvalForward(out.grad_fn, self._validation(), module, list(out.shape), modes)
        self.pending.append(forward)

    def _called_eval(self) -> None:
        """Remember the user's frames running when ``eval()`` was called (``eval()`` tells every
        submodule: the stack is walked once per frame that calls it)."""
        frame = next(where.their_frames(1), None)
        if frame is None or self.callers.get(id(frame)) is frame.f_code:
            return
        self.callers = {id(f): f.f_code for f in where.their_frames(1)}

    def _validation(self) -> Place:
        """The line of the validation code that ran this forward: in the innermost of the
        user's frames that called ``eval()`` and still runs (a frame is known by its id and its
        code), else the innermost of the user's frames."""
        innermost = True
        for frame in where.their_frames(1):
            if self.callers.get(id(frame)) is frame.f_code:
                return self.place() if innermost else (frame.f_code.co_filename, frame.f_lineno)
            innermost = False
        return self.place()


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
