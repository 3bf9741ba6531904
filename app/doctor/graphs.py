"""Walks of autograd graphs and of the user's frames: which nodes and leaves a backward reaches,
which names hold a loss graph a backward already used, what the user calls a parameter."""

from __future__ import annotations

import linecache
import re
import types
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

from app.doctor.where import Place

MAX_NODES = 100_000  # a walk stops here: the check is then made on what it saw


def walk(roots: Sequence[torch.Tensor]) -> tuple[set[int], list[torch.Tensor]]:
    """The ids of the nodes a backward from ``roots`` runs through, and the leaves it writes."""
    seen: set[int] = set()
    leaves: list[torch.Tensor] = []
    stack: list[Any] = [r.grad_fn for r in roots if r.grad_fn is not None]
    while stack and len(seen) < MAX_NODES:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        stack.extend(n for n, _ in fn.next_functions)
    return seen, leaves


def reaches(fn: Any, spent: set[int], depth: int = 3) -> bool:
    """Whether ``fn`` or a node within ``depth`` below it is one a backward already ran from."""
    stack = [(fn, 0)]
    while stack:
        node, d = stack.pop()
        if node is None:
            continue
        if id(node) in spent:
            return True
        if d < depth:
            stack.extend((n, d + 1) for n, _ in node.next_functions)
    return False


def chain(fn: Any, limit: int = 100_000) -> int:
    """The nodes a kept graph holds (a sum of losses: one chain per iteration)."""
    seen: set[int] = set()
    stack = [fn]
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


def assignment(frame: types.FrameType, name: str) -> Place:
    """The line of ``frame``'s file that adds into or appends to ``name`` (``running_loss +=
    loss``, ``losses.append(loss)``), else the frame's current line."""
    filename = frame.f_code.co_filename
    pattern = re.compile(
        rf"(?<![\w.]){re.escape(name)}\s*(\+=|=\s*{re.escape(name)}\s*\+|\.append\(|\.extend\()"
    )
    lines = linecache.getlines(filename, frame.f_globals)
    start = frame.f_code.co_firstlineno if frame.f_code.co_name != "<module>" else 1
    for number in range(start, len(lines) + 1):
        if pattern.search(lines[number - 1].split("#")[0]):
            return filename, number
    return filename, frame.f_lineno


def names(frames: Iterable[types.FrameType]) -> dict[int, str]:
    """A name for each parameter the user's modules hold, as they reach it (``model.0.weight``)."""
    found: dict[int, str] = {}
    seen: set[int] = set()
    for _, name, value in scopes(frames):
        if isinstance(value, nn.Module) and id(value) not in seen:
            seen.add(id(value))
            for n, p in value.named_parameters():
                found.setdefault(id(p), f"{name}.{n}")
        elif isinstance(value, nn.Parameter):
            found.setdefault(id(value), name)
    return found


def grad_fn_name(t: torch.Tensor) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__
