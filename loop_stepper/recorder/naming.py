"""The table of names: each watched tensor's name and how good it is (``names.rank``), one
tensor to a name; a tensor no name reaches goes by a made-up one (``leaf0``, ``leaf1``…). A
name a function's locals gave is homed in that function's frame: once it has returned, the name
stays but ranks below any other (``GONE``)."""

from __future__ import annotations

import itertools

from loop_stepper.recorder.names import GONE, LOCAL, LOCAL_LOOP, MADE_UP, SELF, Rank

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
