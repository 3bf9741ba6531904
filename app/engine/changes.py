"""What changed: an answer carries only the stores that differ from the Session the client holds.

Every line used to send every store again: the digits MLP's answer was 60 KB of JSON for a
``forward`` that changed no parameter and no ``.grad``. A client that says what it holds
(``?held=``) gets an answer with a ``version``, each store equal to the one it holds left out
and named in ``unchanged``; it puts them back from what it holds (``static/js/changes.js``).
``held`` is the ``version`` of an answer it holds, ``start`` for its creation's answer, or
``none``: the whole Session, with a version. Without ``held`` the answer is the whole Session,
as it always was.

Stores are compared by value, not by who wrote them, so the answer is right whatever made the
change: a line's writes, a rewind, a reset, a lecture's event, another tab on the same session.
The comparison costs little: a tensor past 256 elements is the same summary object while it
is unchanged (``tensors.shown``), and a smaller one is a short list.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, cast

from app.engine.views import HeldStore, SessionView

# what an answer may leave out ("params" is the parameters' values and "grad" their .grad, the
# two fields of each entry of the Session's ``params``; the rest are keys of the Session)
FIELDS: dict[HeldStore, str] = {"params": "value", "grad": "grad"}
WHOLE: tuple[HeldStore, ...] = ("optimizer_state", "buffers", "graph", "spec", "lesson")
STORES: tuple[HeldStore, ...] = (*FIELDS, *WHOLE)
KEPT = 4  # answers a session keeps to compare with: a page holds one, a second tab another
START = "start"  # ``held``: the creation's answer (kept by ``SessionCall.hold``)


def same(a: Any, b: Any) -> bool:
    """Equal values (the same object first: a summary kept while its tensor is unchanged).
    NaN is never equal to itself: a store holding one is sent again, never wrongly left out."""
    return a is b or bool(a == b)


def changed(view: SessionView, held: SessionView) -> SessionView:
    """``view`` without the stores equal to ``held``'s, named in its ``unchanged``.

    The parameters' values and their ``.grad`` are two stores in one list: when either
    changed, ``params`` is there with every entry, and an entry leaves out a field only where
    it is an unchanged summary (a tensor past 256 elements). An entry of exact values carries
    both fields whenever it is sent: a few hundred numbers at most, and whoever reads an entry
    (the page's views, a test's hook on the wire) finds it whole."""
    now, then = cast(dict[str, Any], view), cast(dict[str, Any], held)
    out = dict(now)
    unchanged: list[HeldStore] = []
    params, before = now["params"], then.get("params")
    if before is not None and _frames(params) == _frames(before):
        pairs = list(zip(params, before, strict=True))
        equal = {f: [same(a[f], b[f]) for a, b in pairs] for f in FIELDS.values()}
        kept = [s for s, f in FIELDS.items() if all(equal[f])]
        if len(kept) == len(FIELDS):
            del out["params"]
        else:
            out["params"] = [
                {k: v for k, v in p.items() if not (k in equal and equal[k][i] and _summary(v))}
                for i, p in enumerate(params)
            ]
        unchanged += kept
    for store in WHOLE:
        if store in now and store in then and same(now[store], then[store]):
            del out[store]
            unchanged.append(store)
    out["unchanged"] = unchanged
    return cast(SessionView, out)


def _summary(value: Any) -> bool:
    """A tensor sent as its summary (``tensors.shown``): exact values are lists or numbers."""
    return isinstance(value, dict)


def _frames(params: list[dict[str, Any]]) -> list[tuple[str, list[int], str]]:
    """Each entry's name, shape and dtype: a store compared field by field only if these hold."""
    return [(p["name"], p["shape"], p["dtype"]) for p in params]


class Answers:
    """The Sessions one session answered last, by ``version``: what its clients may hold.

    A version is this object's own random prefix and a count, so one never names another
    session's answer nor an answer of an earlier copy of this session (a replay, another
    process): those are not here, and the client gets the whole Session."""

    def __init__(self, kept: int = KEPT) -> None:
        self.prefix = secrets.token_hex(4)
        self.count = 0
        self.kept = kept
        self._views: OrderedDict[str, SessionView] = OrderedDict()

    def hold(self, version: str, view: Callable[[], SessionView]) -> None:
        """Keep ``view()`` as what ``version`` names, unless it is kept already."""
        if version not in self._views:
            self._keep(version, view())

    def answer(self, view: SessionView, held: str | None) -> SessionView:
        """``view`` under a new version, its stores equal to ``held``'s left out (all of it
        when ``held`` is not one of the kept answers); without ``held``, ``view`` itself."""
        if held is None:
            return view
        before = self._views.get(held)
        self.count += 1
        version = f"{self.prefix}.{self.count}"
        self._keep(version, view)
        out = view if before is None else changed(view, before)
        return {**out, "version": version}

    def _keep(self, version: str, view: SessionView) -> None:
        self._views[version] = view
        while len(self._views) > self.kept:
            self._views.popitem(last=False)
