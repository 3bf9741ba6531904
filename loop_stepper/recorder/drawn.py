"""The parameters as a moment draws them, each drawn again only when it changed.

A loop of tiny statements (makemore's) changes one parameter or none per statement, while
drawing every parameter's value and ``.grad`` (``Tensor.tolist``, a summary past 256 elements)
after every statement cost more than the statements themselves. ``Drawn`` keeps each tensor's
last drawing with the marks it was drawn at: the content ``Watched`` keeps for it (its
version's, or its bytes after a ``.data`` change) and its ``.grad``'s identity and version;
equal marks, the same drawing (the same object: a moment shares what it did not change).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from loop_stepper.recorder.watched import Watched
from loop_stepper.stores import draw, tensors
from loop_stepper.stores.views import ParamView


class Drawn:
    """The last drawing of each watched tensor's value and ``.grad``, by its id."""

    def __init__(self) -> None:
        self._values: dict[int, tuple[bytes, Any]] = {}
        # a .grad by a weak reference (a cleared .grad's id is soon a new one's) and version
        self._grads: dict[int, tuple[weakref.ref[torch.Tensor], int, Any]] = {}

    def params(self, watched: Watched) -> list[ParamView]:
        """Each shown parameter as ``stores.draw.params`` draws it, reusing unchanged parts."""
        rows: list[ParamView] = []
        values, grads = self._values, self._grads
        for name, p in watched.named.items():
            i = id(p)
            content = watched.content(p)
            kept = values.get(i)
            if kept is None or kept[0] != content:
                kept = values[i] = (content, tensors.shown(p))
            grad: Any = None
            now = p.grad
            if now is not None:
                held = grads.get(i)
                if held is None or held[0]() is not now or held[1] != now._version:
                    held = grads[i] = (weakref.ref(now), now._version, tensors.shown(now))
                grad = held[2]
            rows.append(draw.param(name, p, kept[1], grad))
        return rows

    def regrad(self, params: list[torch.Tensor]) -> bool:
        """These parameters' ``.grad`` may have changed through ``.data`` (``p.grad.data
        .zero_()``, which bumps no version): drawn again, and whether any drawing changed."""
        changed = False
        for p in params:
            now, held = p.grad, self._grads.get(id(p))
            if now is None or held is None or held[0]() is not now:
                continue  # a new .grad or none: its identity tells already
            tensors.forget(now)
            drawing = tensors.shown(now)
            if drawing != held[2]:
                self._grads[id(p)] = (held[0], now._version, drawing)
                changed = True
        return changed
