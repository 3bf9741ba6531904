"""Walks of autograd graphs and of the user's frames: which nodes and leaves a backward reaches,
which names hold a loss graph a backward already used, what the user calls a parameter."""

from __future__ import annotations

import linecache
import re
import sys
import types
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.doctor import where
from loop_stepper.doctor.where import Place

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


def attributes(
    frames: Iterable[types.FrameType],
) -> Iterator[tuple[types.FrameType, str, str, Any, type]]:
    """The attributes of the user's own objects the frames hold (``self.history``, an
    ``AverageMeter``'s ``sum``): each with its frame, the holder's name, the attribute's name,
    its value and the holder's class."""
    seen: set[int] = set()
    for frame, name, value in scopes(frames):
        kind = type(value)
        if id(value) in seen or not _theirs(kind) or isinstance(value, nn.Module | type):
            continue
        seen.add(id(value))
        for attribute, held in list(getattr(value, "__dict__", {}).items()):
            yield frame, name, attribute, held, kind


def _theirs(kind: type) -> bool:
    module = sys.modules.get(kind.__module__)
    filename = getattr(module, "__file__", None) or ""
    return kind.__module__ == "__main__" or (bool(filename) and where.is_theirs(filename))


def attribute_assignment(kind: type, frame: types.FrameType, attribute: str) -> Place:
    """The line of the class's file that adds into or appends to ``self.<attribute>``."""
    module = sys.modules.get(kind.__module__)
    filename = getattr(module, "__file__", None) or frame.f_code.co_filename
    lines = linecache.getlines(filename, getattr(module, "__dict__", None))
    number = _adds_into(lines, rf"\.{re.escape(attribute)}", rf"[\w.]+\.{re.escape(attribute)}", 1)
    return (filename, number) if number else (frame.f_code.co_filename, frame.f_lineno)


def assignment(frame: types.FrameType, name: str) -> Place:
    """The line of ``frame``'s file that adds into or appends to ``name`` (``running_loss +=
    loss``, ``losses.append(loss)``), else the frame's current line."""
    filename = frame.f_code.co_filename
    lines = linecache.getlines(filename, frame.f_globals)
    start = frame.f_code.co_firstlineno if frame.f_code.co_name != "<module>" else 1
    held = re.escape(name)
    number = _adds_into(lines, rf"(?<![\w.]){held}", held, start)
    return filename, number or frame.f_lineno


def _adds_into(lines: list[str], target: str, again: str, start: int) -> int | None:
    """The first line from ``start`` on (1-based, comments left out) that adds into or appends
    to ``target``: ``target +=``, ``target = again +``, ``target.append(``, ``.extend(``."""
    pattern = re.compile(rf"{target}\s*(\+=|=\s*{again}\s*\+|\.append\(|\.extend\()")
    for number in range(start, len(lines) + 1):
        if pattern.search(lines[number - 1].split("#")[0]):
            return number
    return None


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
