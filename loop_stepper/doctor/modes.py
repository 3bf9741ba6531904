"""The train/eval mode as a forward's numbers follow it: ``F.dropout(x, p)`` called with its
default ``training=True`` inside the forward of a module the loop put in eval mode keeps
dropping (``dropout_in_eval``; the module is the innermost one of the user's frames running the
call, its ``self``; ``nn.Dropout`` passes its own mode and is never named); an evaluation (a
forward under ``no_grad`` or ``inference_mode``) through a model in train mode whose BatchNorm
tracks running statistics or whose dropout has p > 0 (``validation_in_train_mode``). Its
forward hooks are in only while gradients are off (an evaluation): a training loop pays
nothing; a model called from PyTorch's own code (``swa_utils.update_bn``, which means it) is
not named."""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.nn.modules.batchnorm import _NormBase
from torch.nn.modules.dropout import _DropoutNd
from torch.utils.hooks import RemovableHandle

from loop_stepper.doctor import where
from loop_stepper.doctor.chart import Chart
from loop_stepper.recorder.files import INSIDE
from loop_stepper.recorder.probe import guarded

_CALLING = str(module_hooks.__file__)  # nn.Module's own call machinery
_OURS = INSIDE[1]  # this package's folder (INSIDE: PyTorch's, then ours)


class Modes:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.hooks: list[RemovableHandle] = []
        self.depth = 0  # modules running now, nested (only the outermost is looked at)
        self.grad = "torch.no_grad()"

    def close(self) -> None:
        self._remove()

    def grad_mode(self, enabled: bool) -> None:
        if not enabled and not self.hooks:
            self.grad = (
                "torch.inference_mode()"
                if torch.is_inference_mode_enabled()
                else ("torch.no_grad()")
            )
            self.hooks = [
                module_hooks.register_module_forward_pre_hook(
                    guarded(self.doctor, "forward_pre", self._pre)
                ),
                _post_hook(guarded(self.doctor, "forward", self._post)),
            ]
        elif enabled:
            self._remove()

    def _remove(self) -> None:
        for hook in self.hooks:
            hook.remove()
        self.hooks, self.depth = [], 0

    def _pre(self, module: nn.Module, args: Any) -> None:
        self.depth += 1
        if self.depth != 1 or not module.training or torch.is_grad_enabled():
            return
        parts = [m for m in module.modules() if m.training and _moves(m)]
        if not parts or _called_by_torch():
            return
        kinds = sorted({type(m).__name__ for m in parts})
        effect = (
            "BatchNorm's running statistics moved with its batches"
            if any(isinstance(m, _NormBase) for m in parts)
            else "dropout masks were drawn, the numbers random"
        )
        evidence = {
            "grad": self.grad,
            "model": type(module).__name__,
            "modules": ", ".join(kinds),
            "effect": effect,
        }
        self.doctor.name("validation_in_train_mode", self.doctor.place(), evidence)

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        self.depth = max(0, self.depth - 1)

    def dropout(self, p: float, training: bool) -> None:
        if not training or not p:
            return
        module = _calling_module()
        if module is not None and not module.training:
            evidence = {"module": type(module).__name__, "p": p, "training": True}
            self.doctor.name("dropout_in_eval", self.doctor.place(), evidence)


def _moves(m: nn.Module) -> bool:
    """A module whose train mode changes an evaluation: dropout with p > 0, a norm layer
    tracking running statistics."""
    if isinstance(m, _DropoutNd):
        return m.p > 0
    if isinstance(m, _NormBase):
        return bool(m.track_running_stats) and m.running_mean is not None
    return False


def _called_by_torch() -> bool:
    """The outermost module was called by PyTorch's own code (past its call machinery)."""
    frame = sys._getframe(2)
    while frame is not None and (
        frame.f_code.co_filename == _CALLING or frame.f_code.co_filename.startswith(_OURS)
    ):
        frame = frame.f_back  # type: ignore[assignment]
    return frame is not None and frame.f_code.co_filename.startswith(INSIDE)


def _post_hook(hook: Any) -> RemovableHandle:
    try:  # always_call: a forward that raises still closes its depth
        return module_hooks.register_module_forward_hook(hook, always_call=True)
    except TypeError:  # torch before 2.1
        return module_hooks.register_module_forward_hook(hook)


def _calling_module() -> nn.Module | None:
    """The module whose forward (a frame of the user's code) made the call, innermost."""
    for frame in where.their_frames(1):
        owner = frame.f_locals.get("self")
        if isinstance(owner, nn.Module):
            return owner
    return None
