"""Where a replay of a timeline's log starts: the keyframes it keeps, which of them serve a
moment exactly, and the loss points a restored Lab's history is rebuilt from.

A keyframe is a captured ``LabState``. It has no graph (a graph cannot be copied), so one is only
taken right before a ``forward``, which builds a fresh graph; the one thing of the old graph that
may still be used after it is the last loss, by a backward before the next loss line. That is
exact when backward had wholly freed that loss (a **clean** keyframe: the Lab brings back a
stand-in that fails the same way); otherwise the keyframe serves only targets whose replay runs
a loss line before any backward.

Imports the engine and the records only (app/log/timeline.py holds a ``Keyframes``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

from app.engine import LabState
from app.engine.entries import ENTRIES
from app.engine.parts import HISTORY_LIMIT
from app.engine.views import LossPointView
from app.log.records import KeyframeSource

KEYFRAMES_IN_MEMORY = 4  # the newest few stay live; older ones are read back from the database
Lines = Iterable[tuple[str, bool]]  # the line events replayed after a keyframe: (entry, ok)


@dataclass
class Keyframe:
    clean: bool  # no loss, or one backward wholly freed: serves every later moment
    state: LabState | None  # None: in the database only


class Keyframes(dict[int, Keyframe]):
    """A timeline's keyframes by the sequence number of the event each follows (-1: the start;
    the oldest kept event's number minus one: the base a forgetting log starts from)."""

    def add(self, seq: int, clean: bool, state: LabState, *, base: int, stored: bool) -> None:
        """Keep a keyframe; when the database has them all (``stored``), only the newest few
        (and the ``base``) keep their state in memory."""
        self[seq] = Keyframe(clean, state)
        if stored:
            live = [s for s, k in self.items() if k.state is not None and s >= 0]
            for old in sorted(live)[:-KEYFRAMES_IN_MEMORY]:
                if old != base:
                    self[old].state = None

    def serves(self, seq: int, lines: Lines, then: str | None = None) -> bool:
        """Whether replaying ``lines`` from the keyframe at ``seq`` is exact (and leaves the
        Lab right for the line ``then``, about to run).

        A clean keyframe's stand-in loss fails a backward as the real one did and gives its
        value, but it is not the real graph: ``running_loss += loss`` on it would keep other
        nodes alive. So that line must not reach the old loss either."""
        clean = self[seq].clean
        for entry, ok in [*lines, *([] if then is None else [(then, True)])]:
            method = ENTRIES[entry].method
            if method == "log_tensor" or (not clean and method in ("backward", "log_item")):
                return False
            if ok and method == "loss":
                return True  # the old loss is replaced before anything could use it
        return clean

    def state(self, seq: int, journal: KeyframeSource | None) -> LabState:
        """The keyframe's state, from memory or else from the database."""
        state = self[seq].state
        if state is None:
            assert journal is not None
            state = journal.keyframe(seq)
        return state

    def cut(self, head: int) -> None:
        """Acting from event ``head`` discards the keyframes taken at or after it (one at the
        head was taken before the forward that is gone now)."""
        for seq in [s for s in self if s >= head and s >= 0]:
            del self[seq]

    def base_before(self, seq: int) -> int | None:
        """The newest clean keyframe before event ``seq``: where a forgetting log can start."""
        bases = [s for s, k in self.items() if k.clean and 0 <= s < seq]
        return max(bases) if bases else None

    def forget_before(self, base: int) -> None:
        for seq in [s for s in self if s < base]:
            del self[seq]


class LossPoints:
    """The loss points of a timeline's kept events, by sequence number, and the newest ones from
    before them (``base``): a keyframe leaves its history out, a restore rebuilds it from here."""

    def __init__(
        self,
        base: Iterable[LossPointView] = (),
        kept: Iterable[tuple[int, LossPointView]] = (),
    ) -> None:
        self.base = list(base)
        self.seqs: list[int] = []
        self.values: list[LossPointView] = []
        for seq, point in kept:
            self.add(seq, point)

    def add(self, seq: int, point: LossPointView) -> None:
        self.seqs.append(seq)
        self.values.append(point)

    def until(self, seq: int) -> list[LossPointView]:
        """The newest points up to event ``seq``: what the Lab's history held then."""
        end = bisect.bisect_right(self.seqs, seq)
        points = self.values[max(0, end - HISTORY_LIMIT) : end]
        room = HISTORY_LIMIT - len(points)
        older = self.base[len(self.base) - room :] if room > 0 else []
        return [*older, *points]

    def cut(self, head: int) -> None:
        """Forget the points after event ``head``."""
        kept = bisect.bisect_right(self.seqs, head)
        del self.seqs[kept:], self.values[kept:]

    def forget_before(self, base: int) -> None:
        """The points up to event ``base`` join the base (the newest ``HISTORY_LIMIT``)."""
        older = bisect.bisect_right(self.seqs, base)
        self.base = [*self.base, *self.values[:older]][-HISTORY_LIMIT:]
        del self.seqs[:older], self.values[:older]
