"""What a backward reaches: the graph of an eval-mode forward (a training pass in eval mode, or
a validation pass that built a graph for nothing), parameters no optimizer holds, a loss graph
a name keeps across iterations, the same loss twice, a float16 graph without a scaler."""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.doctor import graphs
from loop_stepper.doctor.chart import Chart
from loop_stepper.doctor.evals import EvalForward, Evals, in_eval
from loop_stepper.doctor.where import Place

KEPT_ROOTS = 16  # the newest roots a backward ran from, remembered (a kept graph reaches one)


class Reach:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.evals = Evals(doctor.place)
        self.spent: OrderedDict[int, Any] = OrderedDict()  # roots whose graph backward freed
        self.retained: OrderedDict[int, Any] = OrderedDict()  # roots kept by retain_graph
        self.scaled_outputs: dict[int, torch.Tensor] = {}  # what GradScaler.scale gave since
        self.fp16 = False  # a float16 autocast entered since the last backward
        self.orphans: dict[int, tuple[torch.Tensor, int]] = {}

    def close(self) -> None:
        """Eval forwards no backward used were validation with a graph."""
        for forward in self.evals.take():
            self._validation(forward)
        self.evals.remove()

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        doctor = self.doctor
        at = doctor.backward_at
        for r in roots:
            if r.grad_fn is not None and id(r.grad_fn) in self.retained:
                doctor.name("backward_twice_retain", at, {"loss": _value(r), "times": 2})
        if self.fp16 and not any(id(r) in self.scaled_outputs for r in roots):
            doctor.name("float16_without_scaler", at, {"autocast": "float16", "scaler": None})
        self.fp16 = False
        self.scaled_outputs.clear()
        pending = self.evals.take()
        sampled = doctor.sampled()
        if not pending and not sampled:
            return
        ids, leaves = graphs.walk(roots)
        for forward in pending:
            if id(forward.fn) not in ids:
                self._validation(forward)
            elif modes := in_eval(forward.module):
                doctor.name("eval_while_training", at, {"modules": modes})
        if sampled:
            self._orphans(leaves)
            self._kept_graphs()

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        for r in roots:
            if r.grad_fn is not None:
                kept = self.retained if retain_graph else self.spent
                kept[id(r.grad_fn)] = r.grad_fn
                while len(kept) > KEPT_ROOTS:
                    kept.popitem(last=False)

    def mode_set(self, module: nn.Module, training: bool) -> None:
        self.evals.mode(module, training)

    def autocast(self, dtype: torch.dtype, enabled: bool) -> None:
        if enabled and dtype == torch.float16:
            self.fp16 = True

    def scaled(self, scaled: Any) -> None:
        if isinstance(scaled, torch.Tensor):
            self.scaled_outputs[id(scaled)] = scaled

    # -- the walks -------------------------------------------------------------------------

    def _validation(self, forward: EvalForward) -> None:
        module = type(forward.module).__name__
        evidence = {"nodes": graphs.chain(forward.fn), "output": forward.shape, "module": module}
        self.doctor.name("validation_with_grad", forward.where, evidence)

    def _orphans(self, leaves: list[torch.Tensor]) -> None:
        """Parameters a backward reaches that no optimizer holds, seen at two backwards."""
        doctor = self.doctor
        if not doctor.optimizers or doctor.ledger.steps == 0:
            return
        held = set().union(*(o.params for o in doctor.optimizers.values()))
        found = []
        for leaf in leaves:
            if isinstance(leaf, nn.Parameter) and leaf.requires_grad and id(leaf) not in held:
                _, seen = self.orphans.get(id(leaf), (leaf, 0))
                self.orphans[id(leaf)] = (leaf, seen + 1)
                if seen + 1 >= 2:
                    found.append(leaf)
        if found:
            first = next(iter(doctor.optimizers.values()))
            at = first.made_at or doctor.backward_at
            doctor.name("not_in_optimizer", at, {"params": doctor.names(found)})

    def _kept_graphs(self) -> None:
        """Names holding a loss graph a backward already ran from (``running_loss += loss``,
        ``losses.append(loss)``)."""
        if not self.spent:
            return
        spent = set(self.spent)
        for name, value, at in self._holders():
            if isinstance(value, torch.Tensor):
                fn = value.grad_fn
                if fn is None or id(fn) in spent or not graphs.reaches(fn, spent):
                    continue
                evidence = {"name": name, "nodes": graphs.chain(fn), "graphs": "several"}
            elif isinstance(value, list) and len(value) >= 2:
                last = value[-1]
                if not isinstance(last, torch.Tensor) or id(last.grad_fn) not in spent:
                    continue
                evidence = {"name": name, "nodes": "every loss's", "graphs": len(value)}
            else:
                continue
            self.doctor.name("log_tensor", at() or self.doctor.backward_at, evidence)

    def _holders(self) -> Iterable[tuple[str, Any, Callable[[], Place | None]]]:
        """Each name and what it holds, with where it is added into (found when asked)."""
        if self.doctor.kept is not None:
            for name, value, at in self.doctor.kept():
                yield name, value, lambda at=at: at  # type: ignore[misc]
            return
        frames = list(self.doctor.frames())
        for frame, name, value in graphs.scopes(frames):
            if isinstance(value, torch.Tensor | list):
                yield name, value, functools.partial(graphs.assignment, frame, name)
        for frame, holder, attribute, value, kind in graphs.attributes(frames):
            if isinstance(value, torch.Tensor | list):
                line = functools.partial(graphs.attribute_assignment, kind, frame, attribute)
                yield f"{holder}.{attribute}", value, line


def _value(t: torch.Tensor) -> float:
    with torch.no_grad():
        return float(t.detach().reshape(-1)[0])
