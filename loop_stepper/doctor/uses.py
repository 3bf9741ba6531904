"""Whether the forward used a parameter that got no gradient: used, the loss lost its way to it
(``features.detach()``: ``no_gradient``); not used, it belongs to a sub-module this configuration
never calls (an aux head switched off, a parameter read only for its ``.device``): not a bug.

A parameter a step first finds without a gradient waits for the next forward. While some wait,
PyTorch's global forward hook keeps the output graph of each module that holds one of them
directly; at the next step the parameters those graphs reach were used (``judge``). A loop where
every parameter gets its gradient installs no hook and pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.utils.hooks import RemovableHandle

from loop_stepper.recorder.observer import Observer
from loop_stepper.recorder.probe import guarded
from loop_stepper.stores.graph import reached


class ForwardUse:
    def __init__(self, owner: Observer) -> None:
        self.owner = owner
        self.waiting: dict[int, torch.Tensor] = {}
        self.judged: set[int] = set()  # named, or found unused: never judged again
        self.outputs: dict[int, list[Any]] = {}  # a module's id: its latest outputs' grad_fns
        self.hook: RemovableHandle | None = None

    def judge(self, params: list[torch.Tensor]) -> list[torch.Tensor]:
        """Of the parameters a step found without a gradient, those a forward used since the
        step that first found them so; the others seen for the first time wait."""
        reached = self._reached() if self.waiting else set()
        waited, self.waiting = self.waiting, {}
        used = []
        for p in params:
            key = id(p)
            if key in self.judged:
                continue
            if key in waited:
                self.judged.add(key)
                if key in reached:
                    used.append(p)
            else:
                self.waiting[key] = p
        self.outputs.clear()
        if self.waiting and self.hook is None:
            self.hook = module_hooks.register_module_forward_hook(
                guarded(self.owner, "forward", self._forward)
            )
        elif not self.waiting:
            self.remove()
        return used

    def remove(self) -> None:
        if self.hook is not None:
            self.hook.remove()
            self.hook = None
        self.outputs.clear()

    def _forward(self, module: nn.Module, args: Any, output: Any) -> None:
        own = module._parameters
        if not own or not any(id(p) in self.waiting for p in own.values() if p is not None):
            return
        fns = [t.grad_fn for t in _tensors(output) if t.grad_fn is not None]
        if fns:
            self.outputs[id(module)] = fns

    def _reached(self) -> set[int]:
        """The ids of the leaves the kept outputs' graphs reach."""
        _, leaves = reached(fn for fns in self.outputs.values() for fn in fns)
        return {id(leaf) for leaf in leaves}


def _tensors(output: Any) -> Iterator[torch.Tensor]:
    """The tensors of a module's output: itself, or those of a tuple, list or dict."""
    if isinstance(output, torch.Tensor):
        yield output
    elif isinstance(output, tuple | list):
        yield from (t for t in output if isinstance(t, torch.Tensor))
    elif isinstance(output, dict):
        yield from (t for t in output.values() if isinstance(t, torch.Tensor))
