"""Explain a number: one element of ``.grad`` as the parts that made it since it was last set.

A ``Trail`` follows a replay on a scratch Lab line by line: ``zero_grad`` and ``resume`` set the
element (None or zeros) and forget the parts before; each ``backward`` adds a part (the gradient
its loss gives, computed as backward computes it); a GradScaler's unscale and ``clip_grad_norm_``
scale it (by the very factor PyTorch multiplies with). Folding the parts in order in the
gradient's dtype gives the element bit for bit. Each added part is then split into its examples
(``examples.contributions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch.amp.grad_scaler import OptState

from app.engine.entries import ENTRIES
from app.engine.examples import Watch, contributions
from app.engine.predict import alone, element

if TYPE_CHECKING:
    from app.engine.examples import Forward
    from app.engine.lab import Lab

MAX_SPLIT = 8  # the newest added parts split into examples: a split costs a Jacobian (~50 ms)


@dataclass
class Part:
    op: str  # "add" | "scale"
    moment: int
    line: str
    iteration: int
    number: float  # the value added, or the factor
    forward: Forward | None = None  # add: the forward whose loss it came from
    scale: float | None = None  # add: the GradScaler's scale the loss was multiplied by
    examples: list[dict[str, Any]] = field(default_factory=list)


class Trail:
    """The parts of ``name``'s ``.grad`` element ``index``, over the lines a replay runs."""

    def __init__(self, lab: Lab, name: str, index: int) -> None:
        self.name, self.index = name, index
        self.start = element(lab, name, index)  # what it was set to (None or zeros)
        self.parts: list[Part] = []
        self.watch = Watch()
        self._alone: float | None = None
        self._unscaled = False
        self._scale: torch.Tensor | None = None

    def before(self, lab: Lab, entry: str) -> None:
        line = ENTRIES[entry].method
        self.watch.before(lab, line)
        self._alone = alone(lab, self.name, self.index)[0] if line == "backward" else None
        scaler = lab.amp.scaler
        if scaler is not None and line in ("clip_grad_norm", "step"):
            state = scaler._per_optimizer_states.get(id(lab.optimizer))
            self._unscaled = state is not None and state["stage"] is not OptState.READY
            scale = scaler._scale  # update changes it in place: a copy of the one unscale uses
            self._scale = None if scale is None else scale.clone()

    def after(self, lab: Lab, entry: str, ok: bool, moment: int, iteration: int) -> None:
        line = ENTRIES[entry].method
        self.watch.after(lab, line, ok)
        if not ok:
            return  # a line that raised put .grad back as it was
        at = (moment, entry, iteration)
        if line in ("zero_grad", "resume"):
            self.start, self.parts = element(lab, self.name, self.index), []
        elif line == "backward" and self._alone is not None:
            scaler = lab.amp.scaler
            scale = None if scaler is None else scaler.get_scale()
            self.parts.append(Part("add", *at, self._alone, self.watch.of_loss, scale))
        elif line in ("clip_grad_norm", "step") and element(lab, self.name, self.index) is not None:
            if lab.amp.scaler is not None and not self._unscaled and self._scale is not None:
                inverse = self._scale.double().reciprocal().float()  # as unscale_ computes it
                self.parts.append(Part("scale", *at, float(inverse.item())))
            if line == "clip_grad_norm" and lab.last is not None and lab.last["scaled"]:
                self.parts.append(Part("scale", *at, _clip_factor(lab)))

    def fold(self, dtype: torch.dtype) -> float | None:
        """The parts folded in order as PyTorch computed them: the element's value."""
        v = None if self.start is None else torch.tensor(self.start, dtype=dtype)
        for p in self.parts:
            number = torch.tensor(p.number, dtype=dtype)
            if p.op == "add":
                v = number if v is None else v + number
            elif v is not None:
                v = v * number
        return None if v is None else float(v.item())

    def split(self, lab: Lab) -> None:
        """Each of the newest added parts into its examples' contributions."""
        adds = [p for p in self.parts if p.op == "add" and p.forward is not None]
        for p in adds[-MAX_SPLIT:]:
            assert p.forward is not None
            try:
                values = contributions(lab, p.forward, self.name, self.index, p.scale)
            except TypeError:  # a loss with no per-example split
                continue
            p.examples = [{"i": i, "contribution": c} for i, c in enumerate(values)]

    def error(self) -> float | None:
        """How far the examples' float sum is from their part, at most (rounding only)."""
        gaps = [
            abs(sum(e["contribution"] for e in p.examples) - p.number)
            for p in self.parts
            if p.examples
        ]
        return max(gaps) if gaps else None


def _clip_factor(lab: Lab) -> float:
    """``clip_grad_norm_``'s factor from the norm it measured, computed as it computes it."""
    assert lab.last is not None
    dtype = lab.dtype_of_params
    norm = torch.tensor(lab.last["result"], dtype=dtype)
    return float(torch.clamp(lab.max_norm / (norm + 1e-6), max=1.0).item())


def described(parts: list[Part]) -> list[dict[str, Any]]:
    return [
        {
            "op": p.op,
            "moment": p.moment,
            "line": p.line,
            "iteration": p.iteration,
            ("value" if p.op == "add" else "factor"): p.number,
            "examples": p.examples,
        }
        for p in parts
    ]
