"""What a statement read and wrote that no probe hears: the parameters a forward read and the
graph a loss line extends (from a walk of the new graph), and a step written by hand
(``p.data += -lr * p.grad``, ``param -= lr * param.grad`` under ``no_grad``): it writes the
parameters it moved and reads them and the ``.grad`` it used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from loop_stepper.recorder.source import Statement
from loop_stepper.recorder.watched import Watched


def is_loss(value: Any) -> bool:
    """A number autograd can start from: a 0-dim floating tensor with a graph."""
    return (
        isinstance(value, torch.Tensor)
        and value.dim() == 0
        and value.grad_fn is not None
        and value.is_floating_point()
    )


def read_by(root: torch.Tensor, before: torch.Tensor | None, watched: Watched) -> set[str]:
    """What making ``root`` read: the parameters (a forward) and the graph it extends (the
    loss line), from a walk of its new nodes (it stops at the older graph)."""
    reads: set[str] = set()
    old = None if before is None else before.grad_fn
    seen: set[int] = set()
    stack = [root.grad_fn]
    while stack and len(seen) < 10_000:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if old is not None and fn is old:
            reads.add("graph")
            continue
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor) and watched.name_of(variable) is not None:
            reads.add("params")
        stack.extend(n for n, _ in fn.next_functions)
    return reads


def by_hand(
    statement: Statement, scope: Mapping[str, Any], watched: Watched, training: bool
) -> set[str]:
    """What a statement that changed parameters itself (or through ``.data``) read: the
    parameters it moved, when it moved them by their ``.grad``. In the training loop (or
    reading ``.grad``) the tensors it moved or changed through its names are trained, also
    one its update left equal (a bias whose gradient rounds away)."""
    moved = set(watched.moved)
    if training:
        named = (scope.get(n) for n in (*statement.assigns, *statement.touches))
        watched.train(moved | {id(v) for v in named if isinstance(v, torch.Tensor)})
    return {"params"} if moved and statement.grad else set()
