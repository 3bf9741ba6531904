"""The table of names: each watched tensor's name and how good it is (``names.rank``), one
tensor to a name; a tensor no name reaches goes by a made-up one (``leaf0``, ``leaf1``…). A
name a function's locals gave is homed in that function's frame: once it has returned, the name
stays but ranks below any other (``GONE``)."""

from __future__ import annotations

import itertools
import types

from loop_stepper.recorder.names import GONE, LOCAL, LOCAL_LOOP, MADE_UP, SELF, Found, Rank, search

MADE_UP_RANK: Rank = (MADE_UP, False, 0, 0)
HOMED = (LOCAL, SELF, LOCAL_LOOP)  # the tiers of a function's locals


class Naming:
    def __init__(self) -> None:
        self.names: dict[int, tuple[str, Rank]] = {}  # id -> its name and how good it is
        self.holders: dict[str, int] = {}  # name -> id
        self.homes: dict[int, int] = {}  # a tensor named by a function's local -> its frame
        self.frame = 0  # the id of the frame whose locals are being walked
        self._roots: set[str] | None = None
        self._made_up = itertools.count()
        self._looked: set[int] = set()  # ids of the frames whose locals were all walked
        self._barren: set[types.CodeType] = set()  # code whose locals named nothing better

    def roots(self) -> set[str]:
        """The names the names start from (``model`` of ``model.0.weight``)."""
        if self._roots is None:
            self._roots = {root(n) for n in self.holders}
        return self._roots

    def add(self, i: int, name: str, r: Rank) -> str:
        """Name tensor ``i``: ``name``, or a made-up one when empty or taken."""
        if not name or name in self.holders:
            name, r = self.made_up(), MADE_UP_RANK
        self.names[i] = (name, r)
        self.holders[name] = i
        self._roots = None
        self._home(i, r)
        return name

    def rename(self, i: int, name: str, r: Rank) -> int | None:
        """``name`` reaches tensor ``i`` now: it is its name. The tensor that held it before (a
        loop's variable since moved on, a replaced model's weight) is given a made-up one and
        answered, to be named again or let go."""
        other = self.holders.get(name)
        displaced = None
        if other is not None and other != i:
            self.names[other] = (self.made_up(), MADE_UP_RANK)
            self.holders[self.names[other][0]] = other
            displaced = other
        del self.holders[self.names[i][0]]
        self.names[i] = (name, r)
        self._home(i, r)
        self.holders[name] = i
        self._roots = None
        return displaced

    def drop(self, i: int) -> None:
        name = self.names.pop(i)[0]
        del self.holders[name]
        self._roots = None
        self.homes.pop(i, None)

    def left(self, live: set[int]) -> None:
        """The frames in ``live`` still run: a name homed in another has gone with it."""
        for i, home in list(self.homes.items()):
            if home not in live:
                del self.homes[i]
                if i in self.names:
                    name, r = self.names[i]
                    self.names[i] = (name, (GONE, *r[1:]))

    def look(self, frame: types.FrameType, met: Found) -> None:
        """Walk all of a function's locals (``met`` told of each tensor and optimizer) at its
        first statement while a parameter goes by a poor name (``self.a``, a made-up one),
        unless its code's locals named nothing better before (``forward``'s ``self``, at each
        call); first, a name homed in a function that has returned is ``GONE``."""
        key = id(frame)
        if key in self._looked or frame.f_code in self._barren:
            return
        if len(self._looked) > 256:
            self._looked.clear()
        self._looked.add(key)
        live: set[int] = set()
        at: types.FrameType | None = frame
        while at is not None:
            live.add(id(at))
            at = at.f_back
        self.left(live)
        if all(r[0] < SELF for _, r in self.names.values()):
            return
        before = dict(self.names)
        search(frame.f_locals.items(), met)
        if self.names == before:
            self._barren.add(frame.f_code)

    def made_up(self) -> str:
        while True:
            name = f"leaf{next(self._made_up)}"
            if name not in self.holders:
                return name

    def _home(self, i: int, r: Rank) -> None:
        if r[0] in HOMED:
            self.homes[i] = self.frame
        else:
            self.homes.pop(i, None)


def root(name: str) -> str:
    return name.partition(".")[0].partition("[")[0]
