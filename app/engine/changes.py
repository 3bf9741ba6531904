"""What changed: an answer carries only the stores that differ from the Session the client holds.

Every line used to send every store again: the digits MLP's answer was 60 KB of JSON for a
``forward`` that changed no parameter and no ``.grad``. A client that says what it holds
(``?held=``) gets an answer with a ``version``, each store equal to the one it holds left out
and named in ``unchanged``; it puts them back from what it holds (``static/js/changes.js``).
``held`` is the ``version`` of an answer it holds, ``start`` for its creation's answer, or
``none``: the whole Session, with a version. Without ``held`` the answer is the whole Session,
as it always was.

Stores are compared by content, not by who wrote them, so the answer is right whatever made
the change: a line's writes, a rewind, a reset, a lecture's event, another tab on the same
session. An answer a client may hold is kept as its **marks** (``marks``): each tensor's
content compactly and exactly (its bytes, or past 256 elements the digest its summary is kept
under), the small stores as they are. Marks are bytes, which the garbage collector does not
walk: 300 sessions' kept answers as Python lists of numbers made its full collections 5 times
slower (a 130 ms pause under a class). A lecture's events, which arrive as JSON, are compared
by value (``changed``).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch

from app.engine.parts import Parts
from app.engine.views import HeldStore, SessionView
from loop_stepper.stores import tensors
from loop_stepper.stores.draw import held

# what an answer may leave out ("params" is the parameters' values and "grad" their .grad, the
# two fields of each entry of the Session's ``params``; the rest are keys of the Session)
FIELDS: dict[HeldStore, str] = {"params": "value", "grad": "grad"}
WHOLE: tuple[HeldStore, ...] = ("optimizer_state", "buffers", "graph", "spec", "lesson")
STORES: tuple[HeldStore, ...] = (*FIELDS, *WHOLE)
KEPT = 4  # answers a session keeps to compare with: a page holds one, a second tab another
START = "start"  # ``held``: the creation's answer (kept by ``firsts.hold``)

Marks = dict[str, Any]  # a Session's stores as ``marks`` makes them


@dataclass(frozen=True)
class Same:
    """What of a Session equals what is held: each params entry's value and .grad, and the
    other stores (None: the entries are not the held ones, so nothing of them is left out)."""

    values: list[bool] | None
    grads: list[bool] | None
    whole: list[HeldStore]


def same(a: Any, b: Any) -> bool:
    """Equal values (the same object first). NaN is never equal to itself: a store holding one
    is sent again, never wrongly left out."""
    return a is b or bool(a == b)


def marks(lab: Parts, view: SessionView) -> Marks:
    """The stores of ``view`` (just made from ``lab``) as an answer keeps them to compare with:
    each tensor's ``tensors.fingerprint``, the small stores themselves."""
    named = lab.named
    shown = cast(dict[str, Any], view)
    return {
        "frames": tuple((p["name"], tuple(p["shape"]), p["dtype"]) for p in view["params"]),
        "params": tuple(tensors.fingerprint(p) for p in named.values()),
        "grad": tuple(
            None if p.grad is None else tensors.fingerprint(p.grad) for p in named.values()
        ),
        "optimizer_state": tuple(_state(lab, p) for p in named.values()),
        "buffers": tuple(tensors.fingerprint(b) for b in lab.buffers.values()),
        **{store: shown.get(store) for store in ("graph", "spec", "lesson")},
    }


def _state(lab: Parts, param: Any) -> tuple[Any, ...]:
    """What the optimizer holds for ``param``: its keys and their marks, one flat tuple."""
    kept = held(lab.optimizers, param)
    return tuple(
        x
        for k, v in kept.items()
        for x in (k, tensors.fingerprint(v) if isinstance(v, torch.Tensor) else v)
    )


def by_marks(now: Marks, then: Marks) -> Same:
    """What of the Session marked ``now`` equals the one marked ``then``."""
    values = grads = None
    if now["frames"] == then["frames"]:
        values = [a == b for a, b in zip(now["params"], then["params"], strict=True)]
        grads = [a == b for a, b in zip(now["grad"], then["grad"], strict=True)]
    whole = [s for s in WHOLE if now.get(s) is not None and same(now[s], then.get(s))]
    return Same(values, grads, whole)


def by_value(view: SessionView, held: SessionView) -> Same:
    """What of ``view`` equals ``held`` (two Sessions as JSON: a lecture's events)."""
    now, then = cast(dict[str, Any], view), cast(dict[str, Any], held)
    params, before = now["params"], then.get("params")
    values = grads = None
    if before is not None and _frames(params) == _frames(before):
        pairs = list(zip(params, before, strict=True))
        values = [same(a["value"], b["value"]) for a, b in pairs]
        grads = [same(a["grad"], b["grad"]) for a, b in pairs]
    whole = [s for s in WHOLE if s in now and s in then and same(now[s], then[s])]
    return Same(values, grads, whole)


def changed(view: SessionView, held: SessionView) -> SessionView:
    """``view`` without the stores equal to ``held``'s (compared by value)."""
    return without(view, by_value(view, held))


def without(view: SessionView, equal: Same) -> SessionView:
    """``view`` without what is ``equal`` to what is held, named in its ``unchanged``.

    The parameters' values and their ``.grad`` are two stores in one list: when either
    changed, ``params`` is there with every entry, and an entry leaves out a field only where
    it is an unchanged summary (a tensor past 256 elements). An entry of exact values carries
    both fields whenever it is sent: a few hundred numbers at most, and whoever reads an entry
    (the page's views, a test's hook on the wire) finds it whole."""
    out = dict(cast(dict[str, Any], view))
    unchanged: list[HeldStore] = []
    if equal.values is not None and equal.grads is not None:
        flags = {"value": equal.values, "grad": equal.grads}
        kept = [s for s, f in FIELDS.items() if all(flags[f])]
        if len(kept) == len(FIELDS):
            del out["params"]
        else:
            out["params"] = [
                {k: v for k, v in p.items() if not (k in flags and flags[k][i] and _summary(v))}
                for i, p in enumerate(out["params"])
            ]
        unchanged += kept
    for store in equal.whole:
        out.pop(store, None)
        unchanged.append(store)
    out["unchanged"] = unchanged
    return cast(SessionView, out)


def _frames(params: list[dict[str, Any]]) -> list[tuple[str, list[int], str]]:
    """Each entry's name, shape and dtype: a store compared field by field only if these hold."""
    return [(p["name"], p["shape"], p["dtype"]) for p in params]


def _summary(value: Any) -> bool:
    """A tensor sent as its summary (``tensors.shown``): exact values are lists or numbers."""
    return isinstance(value, dict)


class Answers:
    """The Sessions one session answered last, by ``version``, as their marks: what its
    clients may hold.

    A version is this object's own random prefix and a count, so one never names another
    session's answer nor an answer of an earlier copy of this session (a replay, another
    process): those are not here, and the client gets the whole Session."""

    def __init__(self, kept: int = KEPT) -> None:
        self.prefix = secrets.token_hex(4)
        self.count = 0
        self.kept = kept
        self._marks: OrderedDict[str, Marks] = OrderedDict()

    def hold(self, version: str, mark: Callable[[], Marks]) -> None:
        """Keep ``mark()`` as what ``version`` names, unless it is kept already."""
        if version not in self._marks:
            self._keep(version, mark())

    def answer(self, view: SessionView, mark: Callable[[], Marks], held: str | None) -> SessionView:
        """``view`` (marked by ``mark()``) under a new version, its stores equal to ``held``'s
        left out (all of it when ``held`` is not one of the kept answers); without ``held``,
        ``view`` itself."""
        if held is None:
            return view
        before = self._marks.get(held)
        now = mark()
        self.count += 1
        version = f"{self.prefix}.{self.count}"
        self._keep(version, now)
        out = view if before is None else without(view, by_marks(now, before))
        return {**out, "version": version}

    def _keep(self, version: str, marks: Marks) -> None:
        self._marks[version] = marks
        while len(self._marks) > self.kept:
            self._marks.popitem(last=False)
