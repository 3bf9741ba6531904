"""Copies of a log: snapshots, sessions opened from them, and forks, whose past is one
**base** per lecture moment shared by all the forks of that moment (issue 20; see
docs/architecture.md, "Forking a lecture"). The same SQL on both dialects (``LogCopies`` is
mixed into ``LogDatabase``, over its ``_tx``).
"""

from __future__ import annotations

import secrets
import threading
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

from app.db import reading
from app.db.reading import NoSuchLog
from app.db.sql import Cursor
from app.log.records import Saved

FORK_NEWEST = 4  # a base copies its source's newest keyframes (its head replays from one)
FORK_EVERY = 8  # and one in this many older ones: a rewind replays at most ~80 lines more
BASE_GRACE = 3600.0  # seconds a base no fork uses any more is kept (a fork may be taking it)
BASES_KEPT = 64  # sources whose newest base this process remembers


class Forked(NamedTuple):
    saved: Saved  # the fork's log as it starts: its base's (shared: read it, change nothing)
    owner: int  # the forker's owner epoch
    base: str  # the frozen copy of the source's past it reads from (one for many forks)


class LogCopies:
    clock: Callable[[], float]

    def __init__(self) -> None:
        # per source log: its newest base, the (head, cuts) it was made at, and that base's log
        self._bases: OrderedDict[str, tuple[str, tuple[int, int], Saved]] = OrderedDict()
        self._bases_lock = threading.Lock()

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Cursor]: ...

    @staticmethod
    def _rows(db: Cursor, log_id: str, kind: str) -> reading.Rows:
        rows = reading.fetch(db, log_id, kind)
        if rows is None:
            raise NoSuchLog(log_id)
        return rows

    _saved = staticmethod(reading.parse)  # once the connection is let go

    def snapshot(self, log_id: str, token: str) -> None:
        """A frozen copy of the log up to its head, under ``token``."""
        self._copy(log_id, "session", token, "snapshot")

    def open_snapshot(self, token: str, log_id: str) -> None:
        """A new session ``log_id`` whose log is the snapshot's (owned by none yet)."""
        self._copy(token, "snapshot", log_id, "session")

    def fork(self, log_id: str, new_id: str) -> Forked:
        """See ``_fork``."""
        forked = self._fork(log_id, new_id, quick=False)
        assert forked is not None
        return forked

    def quick_fork(self, log_id: str, new_id: str) -> Forked | None:
        """A fork that takes no new base (None, and nothing written, if it would)."""
        return self._fork(log_id, new_id, quick=True)

    def _fork(self, log_id: str, new_id: str, *, quick: bool) -> Forked | None:
        """A new session ``new_id`` at this one's head, owned by the caller (epoch 1, as a
        created one), that writes one row: its past up to the head is read from a **base**, a
        frozen copy of the source's log at its head made by the first fork of that moment and
        shared by every later one (a class of 300 forking a 750-line lecture copies it once).
        A fork then writes only what it does; one that acts from a moment of its past reads
        less of the base (``upto``), and the base stays while any log reads from it.

        Of the keyframes a base copies only the newest ``FORK_NEWEST`` and every
        ``FORK_EVERY``-th older one: a fork's rewind far into its past replays a few more lines
        (the same numbers: replays are exact).

        ``quick``: None (and nothing written) if that takes a new base: a copy of the log."""
        with self._one_snapshot() as db:
            row = db.execute(reading.LOG, (log_id, "session")).fetchone()
            if row is None:
                raise NoSuchLog(log_id)
            head = self._head(db, log_id, row)
            with self._bases_lock:
                known = self._bases.get(log_id)
            # the past up to the head is what it was if no write has changed a past since
            # (appends only add after the end; any other write counts in `cuts`)
            if known is None or known[1] != (head, row[7]) or not self._exists(db, known[0]):
                if quick:
                    return None
                base = secrets.token_urlsafe(16)  # never shown: no one opens it as a snapshot
                self._copy_in(db, log_id, "session", base, "snapshot", thin=True, is_base=True)
                known = (base, (head, row[7]), self._saved(self._rows(db, base, "snapshot")))
                with self._bases_lock:
                    self._bases[log_id] = known
                    self._bases.move_to_end(log_id)
                    while len(self._bases) > BASES_KEPT:
                        self._bases.popitem(last=False)
            base, _, saved = known
            now = self.clock()
            # a base is kept BASE_GRACE after its newest fork: it is marked in use again now
            # and then only (concurrent forks must not all write its row: PostgreSQL would
            # fail all but one), and the sweep deletes it only if this mark is old (_drop_base)
            db.execute(
                "UPDATE logs SET used = ? WHERE id = ? AND used < ?",
                (now, base, now - BASE_GRACE / 2),
            )
            db.execute(
                "INSERT INTO logs (id, kind, setup, head, first, dropped, base_points, used, "
                "owner, base, upto) SELECT ?, 'session', setup, head, first, dropped, "
                "base_points, ?, 1, id, ? FROM logs WHERE id = ?",
                (new_id, now, head, base),
            )
        return Forked(saved, 1, base)

    @staticmethod
    def _head(db: Cursor, log_id: str, row: Any) -> int:
        """The sequence number of the last event of the log (its head) as read with LOG."""
        if row[1] is not None:
            return int(row[1])
        newest = db.execute(
            f"SELECT coalesce(max(seq), -1) FROM ({reading.EVENTS}) AS e",
            reading.sources(row, log_id),
        ).fetchone()
        return int(newest[0])

    @staticmethod
    def _exists(db: Cursor, base: str) -> bool:
        """Whether a base is still there (one no fork used for long is swept)."""
        return db.execute("SELECT 1 FROM logs WHERE id = ?", (base,)).fetchone() is not None

    def _copy(self, source: str, source_kind: str, target: str, kind: str) -> None:
        with self._one_snapshot() as db:
            self._copy_in(db, source, source_kind, target, kind)

    def _copy_in(
        self,
        db: Cursor,
        source: str,
        source_kind: str,
        target: str,
        kind: str,
        *,
        thin: bool = False,
        is_base: bool = False,
    ) -> None:
        """Copy a log up to its head into a log of its own (a fork's past read from its base
        is copied too: the copy needs nothing else)."""
        # no lock of the source's session is held (a fork): run in ``_one_snapshot``, so the
        # copy holds whole actions, never half of one appended meanwhile
        row = db.execute(reading.LOG, (source, source_kind)).fetchone()
        if row is None:
            raise NoSuchLog(source)
        head, first, where = self._head(db, source, row), int(row[2]), reading.sources(row, source)
        db.execute(
            "INSERT INTO logs (id, kind, setup, head, first, dropped, base_points, used, owner, "
            "is_base) SELECT ?, ?, setup, head, first, dropped, base_points, ?, 0, ? "
            "FROM logs WHERE id = ?",
            (target, kind, self.clock(), int(is_base), source),
        )
        db.execute(
            "INSERT INTO events (log, seq, body) "
            f"SELECT ?, seq, body FROM ({reading.EVENTS}) AS e WHERE seq <= ?",
            (target, *where, head),
        )
        # a keyframe at the head or later was taken before an event that is not copied
        if not thin:
            db.execute(
                "INSERT INTO keyframes (log, seq, clean, state) "
                f"SELECT ?, seq, clean, state FROM ({reading.KEYFRAMES}) AS k WHERE seq < ?",
                (target, *where, head),
            )
            return
        # the one before the first kept event stays: a log that forgot its start replays from it
        db.execute(
            "INSERT INTO keyframes (log, seq, clean, state) "
            "SELECT ?, seq, clean, state FROM ("
            " SELECT seq, clean, state, ROW_NUMBER() OVER (ORDER BY seq DESC) AS n"
            f" FROM ({reading.KEYFRAMES}) AS k WHERE seq < ?) AS newest"
            " WHERE n <= ? OR n / ? * ? = n OR seq = ?",  # (no %: psycopg's placeholder)
            (target, *where, head, FORK_NEWEST, FORK_EVERY, FORK_EVERY, first - 1),
        )

    def _one_snapshot(self) -> AbstractContextManager[Cursor]:
        """A transaction whose statements all read one moment of the database (SQLite's
        transactions run one at a time anyway; PostgreSQL's are asked for it)."""
        return self._tx()

    def _drop_base(self, base: str, before: float) -> bool:
        """Delete a base not marked in use since ``before`` (a fork marking it meanwhile keeps
        it: PostgreSQL checks the condition again on the row that fork wrote)."""
        with self._tx() as db:
            if not db.execute(
                "DELETE FROM logs WHERE id = ? AND is_base = 1 AND used < ?", (base, before)
            ).rowcount:
                return False
            db.execute("DELETE FROM events WHERE log = ?", (base,))
            db.execute("DELETE FROM keyframes WHERE log = ?", (base,))
        return True
