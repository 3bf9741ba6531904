"""Who holds loss graphs across iterations: the names of the user's frames, the attributes of
their own objects (a ``Trainer``'s ``history``, an ``AverageMeter``'s ``sum``, a Lightning
module's ``losses``) and the lists and dicts these hold, one level down; each counted by the
iterations whose graphs it keeps alive.

A backward frees the saved tensors of the graph it ran through but not its nodes: a name still
holding that graph (``total_loss += loss``, ``losses.append(loss)``) keeps the nodes and what
they hold. A graph is known as an iteration's by its root (``Spent``: the roots backwards ran
from, each with the steps taken when it ran); a holder reaching the roots of more iterations
at each look keeps a graph that grows with the run (``log_tensor``). One that reaches one
iteration's (``errD = errD_real + errD_fake``, reassigned every iteration) keeps no more than
that and is not named.
"""

from __future__ import annotations

import sys
import types
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from loop_stepper.doctor import where

LABELS = 8  # iterations remembered (their roots), and the most a look counts
PER_LABEL = 4  # roots remembered per iteration (a GAN's, LBFGS's several backwards)
NODES = 256  # nodes a look walks at most from one holder
SAMPLED = 16  # elements of a long list looked at, spread over it (and the newest LABELS)


def node_key(fn: Any) -> int:
    """A graph node's identity that holds no reference to it: its sequence number, given when
    autograd made it (an id could be a freed node's, reused)."""
    number = getattr(fn, "_sequence_nr", None)
    return int(number()) if number is not None else id(fn)


class Spent:
    """The roots the newest backwards ran from, each with its iteration (the steps taken when
    it ran), known by their nodes' sequence numbers: no graph is kept alive by the doctor (an
    LBFGS step's twenty graphs, each a whole unrolled LSTM). The nodes just below a root count
    as it (a GradScaler's scaled loss is a product over the loss a name keeps)."""

    def __init__(self) -> None:
        self.labels: OrderedDict[int, list[list[int]]] = OrderedDict()  # iteration -> roots
        self.ids: dict[int, int] = {}  # a root's node (or one just below) -> its iteration

    def add(self, fn: Any, label: int) -> None:
        roots = self.labels.setdefault(label, [])
        if len(roots) >= PER_LABEL:
            return
        keys = [node_key(n) for n in [fn, *(n for n, _ in fn.next_functions if n is not None)]]
        roots.append(keys)
        for key in keys:
            self.ids.setdefault(key, label)
        while len(self.labels) > LABELS:
            _, gone = self.labels.popitem(last=False)
            for old in gone:
                for key in old:
                    if self.ids.get(key) not in self.labels:
                        self.ids.pop(key, None)

    def __bool__(self) -> bool:
        return bool(self.ids)

    def count(self, value: Any, current: frozenset[int] = frozenset()) -> int:
        """The iterations whose graphs ``value`` (a tensor, or a list, tuple or deque of them)
        keeps alive, up to ``LABELS``. Walked breadth first from the top, where a kept sum adds
        a node or two an iteration and a list's elements are the roots themselves, for at most
        ``NODES`` nodes (a model's graph below an output is not what is counted); the graph of
        the backward about to run (``current``) is this iteration's and is not walked."""
        if isinstance(value, torch.Tensor):
            tensors: list[Any] = [value]
        elif isinstance(value, list | tuple | deque):
            n = len(value)
            spread = {n - 1 - (i * n) // SAMPLED for i in range(SAMPLED)}
            picks = range(n) if n <= SAMPLED + LABELS else {*range(n - LABELS, n), *spread}
            tensors = [value[i] for i in sorted(picks, reverse=True)]
        else:
            return 0
        found: set[int] = set()
        seen: set[int] = set()
        queue = deque(t.grad_fn for t in tensors if isinstance(t, torch.Tensor))
        while queue and len(seen) < NODES and len(found) < LABELS:
            fn = queue.popleft()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            key = node_key(fn)
            label = self.ids.get(key)
            if label is not None:
                found.add(label)  # its graph below is that iteration's: not walked
            elif key not in current:
                queue.extend(n for n, _ in fn.next_functions)
        return len(found)


@dataclass(eq=False)
class Keeper:
    """A place that holds values: a frame's name, an object's attribute or a dict's key."""

    name: str  # as the user writes it: ``total_loss``, ``self.losses``, ``history["loss"]``
    key: tuple[Any, ...]  # the same holder at every look (a code and a name, a class and one)
    get: Callable[[], Any]  # what it holds now
    frame: types.FrameType | None  # the user's frame it was found from
    kind: type | None = None  # the class whose attribute it is


def holders(
    frames: Iterable[types.FrameType], owners: Iterable[Any] = ()
) -> Iterator[tuple[Keeper, Any]]:
    """Each holder of the user's frames that holds a tensor or a container, with its value;
    and the attributes of ``owners``, the user's objects met as ``self`` in their frames (a
    Lightning module the trainer runs, which no name of theirs holds)."""
    seen: set[int] = set()
    innermost = None
    for frame, name, value, scope in _scopes(frames):
        innermost = innermost or frame
        key = (frame.f_code, name)
        yield from _held(Keeper(name, key, _getter(scope, name), frame), value)
        if id(value) not in seen and not isinstance(value, type) and _theirs(type(value)):
            seen.add(id(value))
            yield from _attributes("self" if name == "self" else name, value, frame)
    for owner in owners:
        if id(owner) not in seen:
            seen.add(id(owner))
            yield from _attributes("self", owner, innermost)


def _attributes(
    shown: str, value: Any, frame: types.FrameType | None
) -> Iterator[tuple[Keeper, Any]]:
    kind = type(value)
    for attribute, held in list(getattr(value, "__dict__", {}).items()):
        if attribute.startswith("_") or isinstance(held, nn.Module):
            continue
        get = _attribute(value, attribute)
        yield from _held(Keeper(f"{shown}.{attribute}", (kind, attribute), get, frame, kind), held)


def owner(frames: Iterable[types.FrameType]) -> Any:
    """The innermost ``self`` of the user's frames that is an object of their own class."""
    for frame in frames:
        value = frame.f_locals.get("self")
        if value is not None and _theirs(type(value)):
            return value
    return None


def _held(holder: Keeper, value: Any) -> Iterator[tuple[Keeper, Any]]:
    if isinstance(value, torch.Tensor | list | tuple | deque):
        yield holder, value
    elif isinstance(value, dict) and len(value) <= 64:
        for k, v in list(value.items()):
            if isinstance(k, str) and isinstance(v, torch.Tensor | list | deque):
                get = holder.get
                item = Keeper(
                    f"{holder.name}[{k!r}]",
                    (*holder.key, k),
                    lambda get=get, k=k: _item(get(), k),  # type: ignore[misc]
                    holder.frame,
                    holder.kind,
                )
                yield item, v


def _scopes(
    frames: Iterable[types.FrameType],
) -> Iterator[tuple[types.FrameType, str, Any, dict[str, Any] | types.FrameType]]:
    """Every name the user's frames hold (their locals, the outermost one's globals), with
    where to read it again."""
    last = None
    for frame in frames:
        last = frame
        for name, value in list(frame.f_locals.items()):
            yield frame, name, value, frame
    if last is not None and last.f_globals is not last.f_locals:
        for name, value in list(last.f_globals.items()):
            if not name.startswith("__"):
                yield last, name, value, last.f_globals


def _getter(scope: dict[str, Any] | types.FrameType, name: str) -> Callable[[], Any]:
    if isinstance(scope, dict):
        return lambda: scope.get(name)
    return lambda: scope.f_locals.get(name)


def _attribute(owner: Any, attribute: str) -> Callable[[], Any]:
    return lambda: getattr(owner, attribute, None)


def _item(container: Any, key: str) -> Any:
    return container.get(key) if isinstance(container, dict) else None


def _theirs(kind: type) -> bool:
    """A class of the user's own (their module's nn.Module subclasses too)."""
    module = sys.modules.get(kind.__module__)
    filename = getattr(module, "__file__", None) or ""
    return kind.__module__ == "__main__" or (bool(filename) and where.is_theirs(filename))
