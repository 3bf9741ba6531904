"""The autograd graph as PyTorch holds it: a walk of the real ``grad_fn`` chain."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from loop_stepper.stores.views import EdgeView, GraphView, NodeView


class Names:
    """Each parameter's name for as long as the parameter lives. A graph built before a
    ``resume`` reaches the old model's parameters: they keep their names, whenever the graph is
    walked. Keyed by ``id`` and checked by a weak reference (a freed tensor's id is reused)."""

    def __init__(self, named: Mapping[str, torch.Tensor]) -> None:
        self._by_id: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}
        self.add(named)

    def add(self, named: Mapping[str, torch.Tensor]) -> None:
        """Name these too (a resume's new parameters); forget the ones no longer alive."""
        self._by_id = {k: v for k, v in self._by_id.items() if v[0]() is not None}
        self._by_id.update((id(p), (weakref.ref(p), n)) for n, p in named.items())

    def of(self, tensor: torch.Tensor) -> str:
        hit = self._by_id.get(id(tensor))
        return hit[1] if hit is not None and hit[0]() is tensor else "tensor"


class Graph:
    """The newest graph a line built (``out`` or the loss is its root), as the page draws it,
    and whether a backward freed it. Its shape never changes once built: walked once, not on
    every answer."""

    def __init__(self, named: Mapping[str, torch.Tensor]) -> None:
        self.names = Names(named)
        self.root: torch.Tensor | None = None  # None: no graph (a restore: none can be copied)
        self.freed = False
        self._walked: tuple[torch.Tensor | None, list[NodeView], list[EdgeView]] = (None, [], [])

    def start(self, root: torch.Tensor | None) -> None:
        self.root, self.freed = root, False

    def backward(self, loss: torch.Tensor, retain_graph: bool) -> None:
        """A backward from ``loss`` without ``retain_graph`` freed it (or the part it walked)."""
        if not retain_graph and loss is self.root:
            self.freed = True

    def view(self, out_dtype: str | None) -> GraphView:
        if self._walked[0] is not self.root:
            self._walked = (self.root, *walk(self.root, self.names))
        _, nodes, edges = self._walked
        return {
            "status": "empty" if not nodes else "freed" if self.freed else "built",
            "nodes": nodes,
            "edges": edges,
            "out_dtype": out_dtype,
        }


def _dtype(fn: Any) -> str | None:
    """The dtype of the tensor the node's forward op made (the gradient it receives)."""
    meta = getattr(fn, "_input_metadata", None)  # PyTorch's own record, for its compiler
    return str(meta[0].dtype).removeprefix("torch.") if meta else None


def walk(root: torch.Tensor | None, names: Names) -> tuple[list[NodeView], list[EdgeView]]:
    """Nodes and edges reachable from ``root.grad_fn``.

    Labels are PyTorch's class names (``AddmmBackward0``, ``AccumulateGrad``); an
    ``AccumulateGrad`` leaf also names its parameter.
    An edge runs from a node to one of its ``next_functions``: the way backward walks.
    """
    nodes: list[NodeView] = []
    edges: list[EdgeView] = []
    if root is None or root.grad_fn is None:
        return nodes, edges
    ids: dict[Any, str] = {}

    def visit(fn: Any) -> str:
        key = ids.get(fn)
        if key is None:
            key = ids[fn] = f"n{len(ids)}"
            label = type(fn).__name__
            variable = getattr(fn, "variable", None)
            if variable is not None:
                label = f"{label}: {names.of(variable)}"
            nodes.append({"id": key, "label": label, "dtype": _dtype(fn)})
            stack.append(fn)
        return key

    stack: list[Any] = []
    visit(root.grad_fn)
    while stack:
        fn = stack.pop()
        source = ids[fn]
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                edges.append({"source": source, "target": visit(nxt)})
    return nodes, edges


MAX_NODES = 100_000  # a walk stops here: whoever reads it decides on what it saw


def reached(nodes: Iterable[Any]) -> tuple[set[int], list[torch.Tensor]]:
    r"""The ids of the autograd nodes reached from ``nodes`` (``grad_fn``\ s), at most
    ``MAX_NODES``, and the leaves among them in the order met (the tensors whose ``.grad``
    their ``AccumulateGrad`` nodes write): what a backward from those nodes runs through."""
    seen: set[int] = set()
    leaves: list[torch.Tensor] = []
    stack: list[Any] = list(nodes)
    while stack and len(seen) < MAX_NODES:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        for nxt, _ in fn.next_functions:  # a loop, not a generator: no frame for a tracer
            stack.append(nxt)
    return seen, leaves


_SAVED: dict[type, list[str]] = {}


def kept(tensor: torch.Tensor) -> tuple[int, int]:
    """The autograd nodes a tensor keeps alive and the bytes of their saved tensors that
    are still held (backward frees them; a freed or since-modified one counts nothing)."""
    seen: set[int] = set()
    held: dict[tuple[int, int], int] = {}  # each saved region once (a tensor saved twice)
    stack = [tensor.grad_fn] if tensor.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        kind = type(node)
        if kind not in _SAVED:  # dir() is slow; a node class's saved attributes never change
            _SAVED[kind] = [a for a in dir(node) if a.startswith("_saved_")]
        for attr in _SAVED[kind]:
            try:
                value = getattr(node, attr)
            except RuntimeError:  # freed by backward, or modified in place since
                continue
            if isinstance(value, torch.Tensor) and not value.is_nested:
                # the saved tensor's own bytes, not its storage's: an accumulation micro-batch
                # is a view of the whole batch, but a copy of just its rows once a keyframe is
                # read back from the database, and a rewind must not change the number
                held[(value.data_ptr(), value.nbytes)] = value.nbytes
        stack += [n for n, _ in node.next_functions if n is not None]
    return len(seen), sum(held.values())
