"""The names a cell's namespace reaches a tensor by: ``W1``, ``model.layers.0.weight``,
``layers[3].gamma``, found by a bounded walk of what the names hold.

The walk reads only what holds no code of the user's: a module's ``_parameters`` and
``_modules`` (spelt as ``named_parameters`` spells them), an object's own ``__dict__``, lists,
tuples and dicts; never a property, a ``__getattr__`` or an item of a big container. It keeps
nothing: a search returns paths and ids, and the objects it passed are let go.

A name's **rank** orders the ways to one tensor: the cell's namespace first, through a loop's
variable (``p``) after any other name, a function's locals after the namespace's (a library's
running function's too: d2l's ``w`` and ``b``), its ``self`` (``self.a`` while ``__init__``
runs) after its other locals, its loop's variable (``p`` of ``for p in params``) after those,
a local of a function that has returned after those, an optimizer's ``param_groups`` after them
and a made-up name last;
within one tier, a name ending in an attribute (``layers[3].gamma``) before one ending in a
list's item (``parameters[5]``), then fewer steps, then fewer characters.

Also here: what holds no parameter (``dull``), whether an optimizer holds a tensor, the
leaves a backward writes ``.grad`` into, and the scopes of the functions running now.
"""

from __future__ import annotations

import types
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.stores.graph import reached

Rank = tuple[int, bool, int, int]  # (tier, an item, steps, characters): smaller is better
NAMESPACE, LOOP_VARIABLE, LOCAL, SELF, LOCAL_LOOP, GONE, OPTIMIZER, MADE_UP = range(8)

MAX_DEPTH = 4  # steps through lists, dicts and objects (a module's sub-modules are free)
MAX_ITEMS = 1024  # a bigger list or dict is data, not a model: not walked
MAX_VISITS = 20_000  # objects one search looks at, at most
_SKIPPED = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
_OPAQUE = (
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    type(None),
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    torch.optim.Optimizer,
)
_FOREIGN = frozenset({"torch", "numpy", "IPython", "pandas", "typing", "functools"})


def rank(tier: int, path: str) -> Rank:
    """How good ``path`` is as a name, in ``tier``."""
    steps = path.count(".") + path.count("[")
    return (tier, path.endswith("]"), steps, len(path))


Found = Callable[[str, Any], None]


def search(roots: Iterable[tuple[str, Any]], found: Found) -> bool:
    """Walk breadth-first from ``roots`` (a name and its value each) and call ``found(path,
    value)`` for each tensor and optimizer on the way, by each path that reaches it, the
    shortest first (``parameters[1]`` and ``layers[0].weight`` both: the caller ranks them;
    what holds others is walked once). False when the walk stopped at its bound of
    visits before its end (what it did not meet may still be there)."""
    queue: deque[tuple[str, Any, int]] = deque()
    seen: set[int] = set()
    for name, value in roots:
        if name.startswith("_") or name in _SKIPPED:
            continue
        queue.append((name, value, 0))
    visits = 0
    while queue and visits < MAX_VISITS:
        path, value, depth = queue.popleft()
        visits += 1
        if isinstance(value, torch.Tensor | torch.optim.Optimizer):
            found(path, value)
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, _OPAQUE):
            continue
        for child_path, child, cost in _children(path, value):
            if depth + cost <= MAX_DEPTH and id(child) not in seen:
                queue.append((child_path, child, depth + cost))
    return not queue


def _children(path: str, value: Any) -> Iterator[tuple[str, Any, int]]:
    """What ``value`` holds, each with its path and the depth it costs."""
    if isinstance(value, nn.Module):
        own = object.__getattribute__(value, "__dict__")
        for name, p in own.get("_parameters", {}).items():
            if p is not None:
                yield f"{path}.{name}", p, 0
        for name, m in own.get("_modules", {}).items():
            if m is not None:
                yield f"{path}.{name}", m, 0
        for child in _attributes(path, own, 1):  # a plain tensor, list or dict it holds
            if isinstance(child[1], torch.Tensor | list | tuple | dict):
                yield child
    elif isinstance(value, list | tuple):
        if len(value) <= MAX_ITEMS and not _plain(value):
            for i, item in enumerate(value):
                yield f"{path}[{i}]", item, 1
    elif isinstance(value, dict):
        if len(value) <= MAX_ITEMS and not _plain(value.values()):
            for key, item in value.items():
                if isinstance(key, str | int):
                    yield f"{path}[{key!r}]", item, 1
    elif type(value).__module__.partition(".")[0] not in _FOREIGN:
        try:
            own = object.__getattribute__(value, "__dict__")
        except AttributeError:
            return
        if isinstance(own, dict):
            yield from _attributes(path, own, 1)


def _attributes(path: str, own: dict[str, Any], cost: int) -> Iterator[tuple[str, Any, int]]:
    for name, item in own.items():
        if isinstance(name, str) and not name.startswith("_"):
            yield f"{path}.{name}", item, cost


def _plain(items: Iterable[Any]) -> bool:
    """A container whose first items are plain numbers or strings (a loss history, a
    vocabulary): data, not parameters; not walked."""
    for i, item in enumerate(items):
        if i == 8:
            return True
        if not isinstance(item, str | int | float | bool):
            return False
    return False


def dull(value: Any) -> bool:
    """A value that holds no parameter: a number, a string, a tensor that is not a leaf
    requiring a gradient (a batch, an activation, a loss)."""
    if isinstance(value, torch.Tensor):
        return not (value.requires_grad and value.is_leaf)
    return isinstance(value, int | float | str | bool | types.NoneType)


def held_by(optimizer: torch.optim.Optimizer, tensor: torch.Tensor) -> bool:
    return any(p is tensor for group in optimizer.param_groups for p in group["params"])


def leaves(roots: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors whose ``.grad`` a backward from ``roots`` accumulates into, in graph order
    (a root that is a leaf itself first)."""
    own = [r for r in roots if r.grad_fn is None and r.requires_grad]
    return own + reached(r.grad_fn for r in roots if r.grad_fn is not None)[1]


MAX_FRAMES = 64  # frames whose locals a search of the running functions reads, at most


def running(
    start: types.FrameType | None, space: Mapping[str, Any], skipped: tuple[str, ...]
) -> Iterator[tuple[types.FrameType, Mapping[str, Any]]]:
    """The frames out from ``start`` and their locals, up to the cell's own (whose namespace is
    ``space``), but those of files under ``skipped`` (PyTorch's, this package's)."""
    frame = start
    for _ in range(MAX_FRAMES):
        if frame is None or frame.f_locals is space:
            return
        if not frame.f_code.co_filename.startswith(skipped):
            yield frame, frame.f_locals
        frame = frame.f_back
