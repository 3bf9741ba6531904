"""What the recorder watches, found as the user's code runs, never configured: the modules that
name the parameters (``model.0.weight``, as the user reaches it), every optimizer that runs and
the parameters it holds, any parameter a backward reaches, the loss and its graph.

``Watched`` is the engine's ``Stores`` protocol (``loop_stepper/stores/draw.py``), so a recorded
moment's stores are drawn by the same function as a Lab's; ``marks`` tells which of those
stores a statement changed, from the tensors' versions (every in-place change bumps one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.stores.graph import Graph
from loop_stepper.stores.views import GraphView

STORES = ("params", "graph", "grad", "loss", "optimizer_state")


def is_loss(value: Any) -> bool:
    """A number autograd can start from: a 0-dim floating tensor with a graph."""
    return (
        isinstance(value, torch.Tensor)
        and value.dim() == 0
        and value.grad_fn is not None
        and value.is_floating_point()
    )


class Watched:
    """The stores of the user's own loop, as far as the run has shown them."""

    def __init__(self) -> None:
        self.params: dict[str, torch.Tensor] = {}
        self._ids: dict[int, str] = {}  # id(tensor) -> its name (the tensors are held above)
        self._optimizers: list[torch.optim.Optimizer] = []
        self._seen: set[int] = set()  # ids of the modules and optimizers named so far
        self.autograd = Graph({})
        self.loss: torch.Tensor | None = None
        self.loss_names: set[str] = set()  # the names backward was called through (``loss``)
        self.spent: dict[int, Any] = {}  # grad_fns a backward freed, held (not weak-referable)
        self._loss_value: tuple[int, int, float] | None = None

    # -- the protocol ----------------------------------------------------------------

    @property
    def named(self) -> Mapping[str, torch.Tensor]:
        return self.params

    @property
    def optimizers(self) -> Sequence[torch.optim.Optimizer]:
        return self._optimizers

    @property
    def loss_value(self) -> float | None:
        loss = self.loss
        if loss is None:
            return None
        key = (id(loss), loss._version)
        if self._loss_value is None or self._loss_value[:2] != key:
            self._loss_value = (*key, loss.item())
        return self._loss_value[2]

    def graph(self) -> GraphView:
        root = self.autograd.root
        return self.autograd.view(None if root is None else _name(root.dtype))

    # -- finding what is watched -------------------------------------------------------

    def find(self, scope: Mapping[str, Any], names: Iterable[str] | None = None) -> None:
        """Name what ``scope`` holds under ``names`` (all of it when None): modules and their
        parameters, optimizers, bare tensors that require a gradient."""
        for name in scope if names is None else names:
            value = scope.get(name)
            if isinstance(value, nn.Module) and id(value) not in self._seen:
                self._seen.add(id(value))
                self._add((f"{name}.{n}", p) for n, p in value.named_parameters())
            elif isinstance(value, torch.optim.Optimizer):
                self.optimizer(value, name)
            elif isinstance(value, torch.Tensor) and value.requires_grad and value.is_leaf:
                self._add([(name, value)])

    def optimizer(self, optimizer: torch.optim.Optimizer, name: str | None = None) -> None:
        """An optimizer that runs (or is found): it and every parameter it holds."""
        if id(optimizer) in self._seen:
            return
        self._seen.add(id(optimizer))
        self._optimizers.append(optimizer)
        label = name or f"optimizer{len(self._optimizers)}"
        self._add(
            (f'{label}.param_groups[{g}]["params"][{i}]', p)
            for g, group in enumerate(optimizer.param_groups)
            for i, p in enumerate(group["params"])
        )

    def reached(self, roots: Sequence[torch.Tensor]) -> None:
        """The leaves a backward from ``roots`` writes ``.grad`` into, named if not yet."""
        self._add((f"leaf{len(self.params)}", leaf) for leaf in leaves(roots))

    def _add(self, named: Iterable[tuple[str, torch.Tensor]]) -> None:
        new = {}
        for name, tensor in named:
            if id(tensor) not in self._ids and name not in self.params:
                self._ids[id(tensor)] = name
                new[name] = tensor
        if new:
            self.params.update(new)
            self.autograd.names.add(new)

    def name_of(self, tensor: torch.Tensor) -> str | None:
        return self._ids.get(id(tensor))

    # -- what a statement changed -----------------------------------------------------

    def marks(self) -> dict[str, Any]:
        """A fingerprint of each store: equal before and after a statement unless it wrote it."""
        params = tuple((id(p), p._version) for p in self.params.values())
        grads = tuple(
            (n, id(p.grad), p.grad._version) for n, p in self.params.items() if p.grad is not None
        )
        state = tuple(
            (id(p), _state_mark(s)) for o in self._optimizers for p, s in o.state.items() if s
        )
        root = self.autograd.root
        loss = self.loss
        return {
            "params": params,
            "graph": (id(root), self.autograd.freed),
            "grad": grads,
            "loss": None if loss is None else (id(loss), loss._version),
            "optimizer_state": state,
        }


def _state_mark(state: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(
        (k, (id(v), v._version) if isinstance(v, torch.Tensor) else v) for k, v in state.items()
    )


def leaves(roots: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors whose ``.grad`` a backward from ``roots`` accumulates into, in graph order."""
    found: list[torch.Tensor] = []
    seen: set[int] = set()
    stack = [r.grad_fn for r in roots if r.grad_fn is not None]
    for r in roots:
        if r.grad_fn is None and r.requires_grad:
            found.append(r)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor):
            found.append(variable)
        stack.extend(n for n, _ in fn.next_functions if n is not None)
    return found


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
