"""The session logs' SQL, once for both dialects: create, append, claim, load, keyframes, and
the sweep that keeps the database bounded (snapshots and forks: ``copies.py``).

A database (``SqliteDatabase``, ``PostgresDatabase``) gives this class its transactions
(``_tx``), its reads (``_read``) and the single statement of a line at the end of the log
(``_write_one``); everything else is here. Placeholders are ``?`` (psycopg's cursor is wrapped
to take them); upserts are ``ON CONFLICT ... DO UPDATE``, which both dialects read.

Owner epochs: every log row has an ``owner`` number. ``create`` and ``claim`` (a replay) bump it
and return it; ``append(..., owner=n)`` writes only while the row still holds ``n``, checked in
the same statement (the line at the end) or transaction (anything else). A process whose
session another process has claimed since gets ``NotOwner`` and must replay it again.

Keyframes (the replay points of ``timeline.py``) live in the table ``keyframes`` (called
``checkpoints`` up to migration 6).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, TypedDict

from app.db.copies import BASE_GRACE, LogCopies
from app.db.datasets import DatasetTables
from app.db.lectures import LectureTables
from app.db.lessons import LessonTables
from app.db.lti import LtiTables
from app.db.reading import NoSuchLog
from app.db.sql import Cursor, dumps
from app.engine import LabState
from app.log import keyframes
from app.log.records import AT_END, Change, Saved, Setup

DAY = 86_400.0


class DatabaseUnavailable(Exception):
    """The database could not be reached, or lost the connection mid-way (a 503): nothing of
    the action is acknowledged; try again."""


class StorageFull(DatabaseUnavailable):
    """A write failed for space: the database's disk (or its size limit) is full (SQLite's
    ``SQLITE_FULL``, PostgreSQL's ``disk_full``, SQLSTATE 53100). Nothing of the action is
    acknowledged, as for a lost database; reads go on, and writes once there is space again."""


class NotOwner(Exception):
    """Another process claimed this session since this one replayed it (its ``owner`` epoch
    moved on): nothing was written; replay the session (claiming it back) and act again."""

    def __init__(self, log_id: str, owner: int, current: int) -> None:
        super().__init__(
            f"session {log_id} was claimed by another process (owner epoch {current}, "
            f"this process holds {owner})"
        )
        self.log_id, self.owner, self.current = log_id, owner, current


def _only_events(change: Change) -> bool:
    return (
        len(change.events) == 1
        and change.rebased is None
        and change.truncate is None
        and change.head is None
        and change.forget_before is None
        and not change.keyframes
    )


class Limits(TypedDict, total=False):
    retain_days: float  # a session idle this long is deleted (7)
    snapshot_days: float  # a snapshot's lifetime (365)
    max_logs: int  # sessions and snapshots (20 000)
    max_bytes: int  # their events and keyframes (2 GiB)
    clock: Callable[[], float]  # time.time


class LogDatabase(LectureTables, LogCopies, DatasetTables, LtiTables, LessonTables):
    """Everything but the connections; see the module's docstring."""

    # appended to the read of a log's row in a write, so that a claim waits for the appends
    # in flight and they for it (PostgreSQL: " FOR SHARE"; SQLite writes one at a time)
    LOCK_ROW = ""

    def __init__(
        self,
        *,
        retain_days: float = 7,
        snapshot_days: float = 365,
        max_logs: int = 20_000,
        max_bytes: int = 2 * 1024**3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.retain, self.snapshot_life = retain_days * DAY, snapshot_days * DAY
        self.max_logs, self.max_bytes, self.clock = max_logs, max_bytes, clock
        super().__init__()  # LogCopies: the bases this process knows

    @abstractmethod
    def _write_one(self, sql: str, params: tuple[Any, ...]) -> int:
        """One statement on its own (atomic by itself); returns its rowcount."""

    @abstractmethod
    def close(self) -> None: ...

    # -- sessions --------------------------------------------------------------------

    def create(self, log_id: str, setup: Setup) -> int:
        """A new session's log; returns its owner epoch (the creator owns it)."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO logs (id, kind, setup, used, owner) VALUES (?, 'session', ?, ?, 1)",
                (log_id, dumps(setup.to_json()), self.clock()),
            )
        return 1

    def append(self, log_id: str, change: Change, owner: int | None = None) -> None:
        """Write what one action did, all or nothing; with ``owner``, only while the session's
        epoch is still that (else ``NotOwner``, and nothing is written)."""
        check = "" if owner is None else " AND owner = ?"
        mine = () if owner is None else (owner,)
        if _only_events(change):  # the usual line: one statement, one round trip
            ((seq, event),) = change.events
            written = self._write_one(
                "INSERT INTO events (log, seq, body) SELECT ?, ?, ? FROM logs "
                f"WHERE id = ?{check}{self.LOCK_ROW} "
                "ON CONFLICT (log, seq) DO UPDATE SET body = excluded.body",
                (log_id, seq, dumps(event.to_json()), log_id, *mine),
            )
            if not written:
                self._refused(log_id, owner)
            return
        # encoded before the transaction: SQLite writes one at a time, and a run's 5000
        # events take 50 ms to encode but 15 ms to insert (a click waits for the insert only)
        rows = _Rows(log_id, change)
        with self._tx() as db:
            row = db.execute(
                f"SELECT owner FROM logs WHERE id = ?{self.LOCK_ROW}", (log_id,)
            ).fetchone()
            if row is None:
                raise NoSuchLog(log_id)
            if owner is not None and row[0] != owner:
                raise NotOwner(log_id, owner, row[0])
            self._write(db, log_id, change, rows)

    def _refused(self, log_id: str, owner: int | None) -> None:
        """Why a line's statement wrote nothing: the log is gone, or another process owns it."""
        if owner is not None:
            self.check_owner(log_id, owner)
        raise NoSuchLog(log_id)

    def check_owner(self, log_id: str, owner: int) -> None:
        """``NotOwner`` unless the session's epoch is still ``owner`` (``NoSuchLog`` if it is
        gone): what a read that wrote nothing checks before its answer goes out."""
        with self._read() as db:
            row = db.execute("SELECT owner FROM logs WHERE id = ?", (log_id,)).fetchone()
        if row is None:
            raise NoSuchLog(log_id)
        if row[0] != owner:
            raise NotOwner(log_id, owner, row[0])

    @staticmethod
    def _write(db: Cursor, log_id: str, change: Change, rows: _Rows) -> None:
        if not (
            change.rebased is None and change.truncate is None and change.forget_before is None
        ):
            # its past changed: a base made from it before no longer holds it (see fork)
            db.execute("UPDATE logs SET cuts = cuts + 1 WHERE id = ?", (log_id,))
        if change.rebased is not None:
            db.execute("DELETE FROM events WHERE log = ?", (log_id,))
            db.execute("DELETE FROM keyframes WHERE log = ?", (log_id,))
            db.execute(
                "UPDATE logs SET setup = ?, head = NULL, first = 0, dropped = 0, "
                "base_points = '[]', base = NULL, upto = NULL WHERE id = ?",
                (dumps(change.rebased.to_json()), log_id),
            )
        if change.truncate is not None:
            db.execute("DELETE FROM events WHERE log = ? AND seq >= ?", (log_id, change.truncate))
            db.execute(
                "DELETE FROM keyframes WHERE log = ? AND seq >= ?", (log_id, change.truncate - 1)
            )
            # a fork cutting into its shared past: it reads less of its base
            db.execute(
                "UPDATE logs SET upto = ? WHERE id = ? AND upto >= ?",
                (change.truncate - 1, log_id, change.truncate),
            )
        if change.keyframes:
            db.executemany(
                "INSERT INTO keyframes (log, seq, clean, state) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (log, seq) DO UPDATE "
                "SET clean = excluded.clean, state = excluded.state",
                rows.keyframes,
            )
        if change.events:
            db.executemany(
                "INSERT INTO events (log, seq, body) VALUES (?, ?, ?) "
                "ON CONFLICT (log, seq) DO UPDATE SET body = excluded.body",
                rows.events,
            )
        if change.forget_before is not None:
            first = change.forget_before
            db.execute("DELETE FROM events WHERE log = ? AND seq < ?", (log_id, first))
            db.execute("DELETE FROM keyframes WHERE log = ? AND seq < ?", (log_id, first - 1))
            db.execute(
                "UPDATE logs SET first = ?, dropped = ?, base_points = ? WHERE id = ?",
                (first, change.dropped, dumps(change.base_points), log_id),
            )
            # a fork that forgot all it read from its base no longer needs it
            db.execute(
                "UPDATE logs SET base = NULL, upto = NULL WHERE id = ? AND upto < ?",
                (log_id, first),
            )
        # `used` is not written here (an index would change on every line): sessions in
        # memory are touched when they leave it and before each sweep
        if change.head is not None:
            head = None if change.head == AT_END else change.head
            db.execute("UPDATE logs SET head = ? WHERE id = ?", (head, log_id))

    def touch(self, log_ids: Iterable[str]) -> None:
        """Mark sessions as used (those in memory, answered without writing)."""
        now = self.clock()
        rows = [(now, i) for i in log_ids]
        if rows:
            with self._tx() as db:
                db.executemany("UPDATE logs SET used = ? WHERE id = ?", rows)

    def load(self, log_id: str, kind: str = "session") -> Saved:
        """A log as it stands (claiming nothing: ``claim`` is what a process that will drive
        the session calls)."""
        with self._read() as db:
            rows = self._rows(db, log_id, kind)
        return self._saved(rows)

    def claim(self, log_id: str) -> tuple[Saved, int]:
        """Take a session over: bump its owner epoch and read its log, in one transaction
        (appends of the previous owner that were acknowledged are in it; later ones fail).
        Returns the log and this process's epoch."""
        with self._tx() as db:
            row = db.execute(
                "UPDATE logs SET owner = owner + 1 WHERE id = ? AND kind = 'session' "
                "RETURNING owner",
                (log_id,),
            ).fetchone()
            if row is None:
                raise NoSuchLog(log_id)
            rows = self._rows(db, log_id, "session")
        return self._saved(rows), int(row[0])

    def keyframe(self, log_id: str, seq: int) -> LabState:
        with self._read() as db:
            row = db.execute(
                "SELECT state FROM keyframes WHERE log = ? AND seq = ? UNION ALL "
                "SELECT k.state FROM logs AS l JOIN keyframes AS k ON k.log = l.base "
                "AND k.seq = ? AND k.seq < l.upto WHERE l.id = ?",
                (log_id, seq, seq, log_id),
            ).fetchone()
        if row is None:
            raise NoSuchLog(f"{log_id} keyframe {seq}")
        return keyframes.decode(bytes(row[0]))

    def delete(self, log_id: str) -> bool:
        with self._tx() as db:
            gone = db.execute("DELETE FROM logs WHERE id = ?", (log_id,)).rowcount
            db.execute("DELETE FROM events WHERE log = ?", (log_id,))
            db.execute("DELETE FROM keyframes WHERE log = ?", (log_id,))
        return bool(gone)

    def exists(self, log_id: str) -> bool:
        with self._read() as db:
            row = db.execute(
                "SELECT 1 FROM logs WHERE id = ? AND kind = 'session'", (log_id,)
            ).fetchone()
        return row is not None

    # -- keeping it bounded ---------------------------------------------------------

    def sweep(self, live: Iterable[str] = (), room: int = 0) -> int:
        """Delete sessions idle past their retention, snapshots past their lifetime and bases
        no log reads from, then the oldest idle logs while there are too many (or too few to
        add ``room`` more) or they take too many bytes. Sessions in ``live`` (in memory now)
        and bases a log reads from are never taken. Returns how many logs went."""
        now = self.clock()
        keep = set(live)
        with self._scan() as db:
            # a base is kept while a fork reads from it, and for a while after its last fork
            # (a fork taking it right now may not be visible yet: it updates `used` first)
            old = db.execute(
                "SELECT id FROM logs WHERE (kind = 'session' AND used < ?) "
                "OR (kind = 'snapshot' AND is_base = 0 AND used < ?)",
                (now - self.retain, now - self.snapshot_life),
            ).fetchall()
            bases = db.execute(
                "SELECT id FROM logs WHERE is_base = 1 AND used < ? AND id NOT IN "
                "(SELECT base FROM logs WHERE base IS NOT NULL)",
                (now - BASE_GRACE,),
            ).fetchall()
            doomed = [i for (i,) in old if i not in keep]
            count = int(db.execute("SELECT count(*) FROM logs").fetchone()[0]) - len(doomed)
            rows = db.execute(
                "SELECT id, (SELECT coalesce(sum(length(body)), 0) FROM events WHERE log = id)"
                " + (SELECT coalesce(sum(length(state)), 0) FROM keyframes WHERE log = id)"
                " FROM logs ORDER BY used"
            ).fetchall()
            keep.update(
                i for (i,) in db.execute("SELECT id FROM logs WHERE is_base = 1").fetchall()
            )
        gone = set(doomed)
        size = sum(int(nbytes) for log_id, nbytes in rows if log_id not in gone)
        for log_id, nbytes in rows:
            if count + room <= self.max_logs and size <= self.max_bytes:
                break
            if log_id in keep or log_id in gone:
                continue
            doomed.append(log_id)
            gone.add(log_id)
            count -= 1
            size -= int(nbytes)
        for log_id in doomed:
            self.delete(log_id)
        dropped = sum(self._drop_base(base, now - BASE_GRACE) for (base,) in bases)
        if room:  # making room for a new session: the quick part only
            return len(doomed) + dropped
        with self._tx() as db:  # rows a request wrote while its session was being deleted
            db.execute("DELETE FROM events WHERE log NOT IN (SELECT id FROM logs)")
            db.execute("DELETE FROM keyframes WHERE log NOT IN (SELECT id FROM logs)")
        return len(doomed) + dropped

    def _scan(self) -> AbstractContextManager[Cursor]:
        """Where the sweep's long reads run (SQLite: a connection of their own)."""
        return self._read()

    def size(self, log_id: str) -> int:
        """Bytes of one log's events and keyframes (what the caps count)."""
        with self._read() as db:
            row = db.execute(
                "SELECT (SELECT coalesce(sum(length(body)), 0) FROM events WHERE log = ?)"
                " + (SELECT coalesce(sum(length(state)), 0) FROM keyframes WHERE log = ?)",
                (log_id, log_id),
            ).fetchone()
        return int(row[0])

    def count(self) -> int:
        with self._read() as db:
            return int(db.execute("SELECT count(*) FROM logs").fetchone()[0])


class _Rows:
    """A change's keyframe and event rows, encoded."""

    def __init__(self, log_id: str, change: Change) -> None:
        self.keyframes = [
            (log_id, s, int(clean), st if isinstance(st, bytes) else keyframes.encode(st))
            for s, clean, st in change.keyframes
        ]
        self.events = [(log_id, s, dumps(e.to_json())) for s, e in change.events]
