"""Walks of autograd graphs and of the user's frames: which nodes and leaves a backward reaches,
what a loss's input was made of, the names the user's frames hold, what the user calls a
parameter."""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.stores.graph import reached


def walk(roots: Sequence[torch.Tensor]) -> tuple[set[int], list[torch.Tensor]]:
    """The ids of the nodes a backward from ``roots`` runs through, and the leaves it writes."""
    return reached(r.grad_fn for r in roots if r.grad_fn is not None)


SHAPES = ("View", "Reshape", "UnsafeView", "Transpose", "Permute", "Squeeze", "Unsqueeze", "Clone")
PICKS = ("Select", "Slice")  # a part of the same numbers


def below(fn: Any, kind: str, depth: int = 4) -> Any:
    """The node of ``kind`` (a name's prefix: ``Softmax``) whose output ``fn`` took, through at
    most ``depth`` nodes that only change the shape or pick a part; else None."""
    for _ in range(depth):
        nexts = [n for n, _ in getattr(fn, "next_functions", ()) if n is not None]
        if len(nexts) != 1:
            return None
        fn = nexts[0]
        name = type(fn).__name__
        if name.startswith(kind):
            return fn
        if not name.startswith(SHAPES + PICKS):
            return None
    return None


def chain(*fns: Any, limit: int = 100_000) -> int:
    """The nodes kept graphs hold (a sum of losses: one chain per iteration; a list of losses:
    every loss's graph), counted up to ``limit``."""
    seen: set[int] = set()
    stack = list(fns)
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(n for n, _ in node.next_functions)
    return len(seen)


def scopes(frames: Iterable[types.FrameType]) -> Iterator[tuple[types.FrameType, str, Any]]:
    """Every name the user's frames hold: their locals, and the outermost one's globals."""
    last = None
    for frame in frames:
        last = frame
        for name, value in list(frame.f_locals.items()):
            yield frame, name, value
    if last is not None and last.f_globals is not last.f_locals:
        for name, value in list(last.f_globals.items()):
            yield last, name, value


def names(frames: Iterable[types.FrameType]) -> dict[int, str]:
    """A name for each parameter the user's modules hold, as they reach it (``model.0.weight``),
    and for each tensor that requires grad a name or a module's attribute holds (``w``,
    ``model.pool.p``)."""
    found: dict[int, str] = {}
    seen: set[int] = set()
    for _, name, value in scopes(frames):
        if isinstance(value, nn.Module) and id(value) not in seen:
            seen.add(id(value))
            for n, p in value.named_parameters():
                found.setdefault(id(p), f"{name}.{n}")
            for n, t in attributes(value):
                found.setdefault(id(t), f"{name}.{n}")
        elif isinstance(value, torch.Tensor) and value.requires_grad and value.is_leaf:
            found.setdefault(id(value), name)
    return found


def attributes(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors that require grad ``module`` and its sub-modules hold as plain attributes,
    not ``nn.Parameter``s: ``model.parameters()`` leaves them out."""
    for prefix, m in module.named_modules():
        for n, value in vars(m).items():
            plain = isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter)
            if plain and value.requires_grad and value.is_leaf:
                yield (f"{prefix}.{n}" if prefix else n), value


def grad_fn_name(t: torch.Tensor) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__
