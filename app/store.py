"""Where sessions live between requests and across restarts: their logs, in SQLite.

A session is its log (``timeline.py``): the setup, the events, the head (where it stands after a
rewind) and checkpoints. Every action's ``Change`` is written here, in one transaction, before
its answer goes out, so a server killed at any point (even ``kill -9``) comes back with every
acknowledged answer: the log replays to it. WAL mode with ``synchronous=NORMAL`` survives a
killed process (the OS holds what was written); only a power cut may lose the newest writes.

The interface is narrow (create, append, load, checkpoint, snapshot, delete, sweep) so that a
PostgreSQL store can stand beside this one. Snapshots are frozen copies of a log under their own
token, with their own lifetime.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import checkpoints
from .engine import LabState
from .records import AT_END, Change, Event, Saved, Setup

DAY = 86_400.0
SCHEMA = 2  # PRAGMA user_version; each migration below moves it up by one
MIGRATIONS = {
    1: """
    CREATE TABLE logs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('session', 'snapshot')),
        setup TEXT NOT NULL,
        head INTEGER,  -- NULL: the newest event (a line at the end writes only its event)
        first INTEGER NOT NULL DEFAULT 0,
        dropped INTEGER NOT NULL DEFAULT 0,
        base_points TEXT NOT NULL DEFAULT '[]',
        used REAL NOT NULL
    );
    CREATE INDEX logs_used ON logs (kind, used);
    CREATE TABLE events (
        log TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (log, seq)
    ) WITHOUT ROWID;
    CREATE TABLE checkpoints (
        log TEXT NOT NULL, seq INTEGER NOT NULL, clean INTEGER NOT NULL, state BLOB NOT NULL,
        PRIMARY KEY (log, seq)
    ) WITHOUT ROWID;
    """,
    # lectures (issue 11): a session followed under a join code; its question, answers and
    # the newest events (what a follower's Last-Event-ID resumes from, across a restart)
    2: """
    CREATE TABLE lectures (
        code TEXT PRIMARY KEY,
        session TEXT NOT NULL UNIQUE,
        seq INTEGER NOT NULL DEFAULT 0,
        losses INTEGER NOT NULL DEFAULT 0,
        expires REAL NOT NULL,
        quiz TEXT
    );
    CREATE TABLE lecture_events (
        code TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (code, seq)
    ) WITHOUT ROWID;
    CREATE TABLE lecture_answers (
        code TEXT NOT NULL, voter TEXT NOT NULL, choice TEXT NOT NULL, PRIMARY KEY (code, voter)
    ) WITHOUT ROWID;
    CREATE TABLE self_quizzes (
        session TEXT PRIMARY KEY, preset TEXT NOT NULL, revealed INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
    """,
}
EVENTS_KEPT = 200  # a lecture's newest events kept for followers that resume


@dataclass
class StoredLecture:
    code: str
    session: str
    seq: int  # the newest event's number
    losses: int  # the session's loss count in that event (the next one's history starts there)
    expires: float
    quiz: dict[str, Any] | None
    answers: dict[str, str]  # voter -> choice


class NoSuchLog(KeyError):
    pass


def _only_events(change: Change) -> bool:
    return (
        len(change.events) == 1
        and change.rebased is None
        and change.truncate is None
        and change.head is None
        and change.forget_before is None
        and not change.checkpoints
    )


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"))


class SqliteStore:
    """One connection, one lock: SQLite writes one transaction at a time anyway, and each of
    ours is a few rows (a line at the newest moment is one event row, one statement)."""

    def __init__(
        self,
        path: str | Path,
        *,
        retain_days: float = 7,
        snapshot_days: float = 365,
        max_logs: int = 20_000,
        max_bytes: int = 2 * 1024**3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.retain, self.snapshot_life = retain_days * DAY, snapshot_days * DAY
        self.max_logs, self.max_bytes, self.clock = max_logs, max_bytes, clock
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=OFF")
        self._migrate()
        # the sweep's long reads on a connection of their own (WAL lets them run beside the
        # writes), so a line's write never waits for a scan of every log
        self._reader = (
            self._db
            if self.path == ":memory:"
            else sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        )
        self._reading = self._lock if self._reader is self._db else threading.Lock()

    def _migrate(self) -> None:
        with self._tx() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for target in range(version + 1, SCHEMA + 1):
                for statement in MIGRATIONS[target].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {target}")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            if self._reader is not self._db:
                self._reader.close()
            self._db.close()

    # -- sessions --------------------------------------------------------------------

    def create(self, log_id: str, setup: Setup) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO logs (id, kind, setup, used) VALUES (?, 'session', ?, ?)",
                (log_id, _dumps(setup.to_json()), self.clock()),
            )

    def append(self, log_id: str, change: Change) -> None:
        """Write what one action did, all or nothing."""
        if _only_events(change):  # the usual line: one statement, atomic on its own
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO events (log, seq, body) VALUES (?, ?, ?)",
                    [(log_id, s, _dumps(e.to_json())) for s, e in change.events],
                )
            return
        with self._tx() as db:
            if change.rebased is not None:
                db.execute("DELETE FROM events WHERE log = ?", (log_id,))
                db.execute("DELETE FROM checkpoints WHERE log = ?", (log_id,))
                db.execute(
                    "UPDATE logs SET setup = ?, head = NULL, first = 0, dropped = 0, "
                    "base_points = '[]' WHERE id = ?",
                    (_dumps(change.rebased.to_json()), log_id),
                )
            if change.truncate is not None:
                db.execute(
                    "DELETE FROM events WHERE log = ? AND seq >= ?", (log_id, change.truncate)
                )
                db.execute(
                    "DELETE FROM checkpoints WHERE log = ? AND seq >= ?",
                    (log_id, change.truncate - 1),
                )
            if change.checkpoints:
                db.executemany(
                    "INSERT OR REPLACE INTO checkpoints (log, seq, clean, state) VALUES (?,?,?,?)",
                    [
                        (log_id, s, clean, checkpoints.encode(st))
                        for s, clean, st in change.checkpoints
                    ],
                )
            if change.events:
                db.executemany(
                    "INSERT OR REPLACE INTO events (log, seq, body) VALUES (?, ?, ?)",
                    [(log_id, s, _dumps(e.to_json())) for s, e in change.events],
                )
            if change.forget_before is not None:
                first = change.forget_before
                db.execute("DELETE FROM events WHERE log = ? AND seq < ?", (log_id, first))
                db.execute("DELETE FROM checkpoints WHERE log = ? AND seq < ?", (log_id, first - 1))
                db.execute(
                    "UPDATE logs SET first = ?, dropped = ?, base_points = ? WHERE id = ?",
                    (first, change.dropped, _dumps(change.base_points), log_id),
                )
            # `used` is not written here (an index would change on every line): sessions in
            # memory are touched when they leave it and before each sweep
            head = None if change.head == AT_END else change.head
            found = db.execute(
                "UPDATE logs SET head = CASE WHEN ? THEN ? ELSE head END WHERE id = ?",
                (change.head is not None, head, log_id),
            ).rowcount
            if not found:
                raise NoSuchLog(log_id)

    def touch(self, log_ids: Iterable[str]) -> None:
        """Mark sessions as used (those in memory, answered without writing)."""
        now = self.clock()
        with self._tx() as db:
            db.executemany("UPDATE logs SET used = ? WHERE id = ?", [(now, i) for i in log_ids])

    def load(self, log_id: str, kind: str = "session") -> Saved:
        with self._lock:
            row = self._db.execute(
                "SELECT setup, head, first, dropped, base_points FROM logs "
                "WHERE id = ? AND kind = ?",
                (log_id, kind),
            ).fetchone()
            if row is None:
                raise NoSuchLog(log_id)
            events = self._db.execute(
                "SELECT body FROM events WHERE log = ? ORDER BY seq", (log_id,)
            ).fetchall()
            marks = self._db.execute(
                "SELECT seq, clean FROM checkpoints WHERE log = ? ORDER BY seq", (log_id,)
            ).fetchall()
        setup, head, first, dropped, base_points = row
        return Saved(
            Setup.from_json(json.loads(setup)),
            AT_END if head is None else head,
            first,
            dropped,
            json.loads(base_points),
            [Event.from_json(json.loads(body)) for (body,) in events],
            [(seq, bool(clean)) for seq, clean in marks],
        )

    def checkpoint(self, log_id: str, seq: int) -> LabState:
        with self._lock:
            row = self._db.execute(
                "SELECT state FROM checkpoints WHERE log = ? AND seq = ?", (log_id, seq)
            ).fetchone()
        if row is None:
            raise NoSuchLog(f"{log_id} checkpoint {seq}")
        return checkpoints.decode(row[0])

    def delete(self, log_id: str) -> bool:
        with self._tx() as db:
            gone = db.execute("DELETE FROM logs WHERE id = ?", (log_id,)).rowcount
            db.execute("DELETE FROM events WHERE log = ?", (log_id,))
            db.execute("DELETE FROM checkpoints WHERE log = ?", (log_id,))
        return bool(gone)

    def exists(self, log_id: str) -> bool:
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM logs WHERE id = ? AND kind = 'session'", (log_id,)
            ).fetchone()
        return row is not None

    # -- snapshots -------------------------------------------------------------------

    def snapshot(self, log_id: str, token: str) -> None:
        """A frozen copy of the log up to its head, under ``token``."""
        self._copy(log_id, "session", token, "snapshot")

    def open_snapshot(self, token: str, log_id: str) -> None:
        """A new session ``log_id`` whose log is the snapshot's."""
        self._copy(token, "snapshot", log_id, "session")

    def _copy(self, source: str, source_kind: str, target: str, kind: str) -> None:
        with self._tx() as db:
            row = db.execute(
                "SELECT head FROM logs WHERE id = ? AND kind = ?", (source, source_kind)
            ).fetchone()
            if row is None:
                raise NoSuchLog(source)
            head = row[0]
            if head is None:  # at its newest event: all of it
                head = (
                    db.execute(
                        "SELECT coalesce(max(seq), -1) FROM events WHERE log = ?", (source,)
                    ).fetchone()[0]
                    + 1
                )
            db.execute(
                "INSERT INTO logs (id, kind, setup, head, first, dropped, base_points, used) "
                "SELECT ?, ?, setup, head, first, dropped, base_points, ? FROM logs WHERE id = ?",
                (target, kind, self.clock(), source),
            )
            db.execute(
                "INSERT INTO events SELECT ?, seq, body FROM events WHERE log = ? AND seq <= ?",
                (target, source, head),
            )
            # a checkpoint at the head or later was taken before an event that is not copied
            db.execute(
                "INSERT INTO checkpoints SELECT ?, seq, clean, state FROM checkpoints "
                "WHERE log = ? AND seq < ?",
                (target, source, head),
            )

    def fork(self, log_id: str, new_id: str) -> None:
        """A new session ``new_id`` whose log is a copy of this one's up to its head."""
        self._copy(log_id, "session", new_id, "session")

    # -- lectures ------------------------------------------------------------------------

    def lectures(self, now: float) -> list[StoredLecture]:
        """Every lecture not yet expired, with its question and answers."""
        with self._lock:
            rows = self._db.execute(
                "SELECT code, session, seq, losses, expires, quiz FROM lectures WHERE expires > ?",
                (now,),
            ).fetchall()
            answers = self._db.execute("SELECT code, voter, choice FROM lecture_answers").fetchall()
        votes: dict[str, dict[str, str]] = {}
        for code, voter, choice in answers:
            votes.setdefault(code, {})[voter] = choice
        return [
            StoredLecture(c, s, q, n, e, None if z is None else json.loads(z), votes.get(c, {}))
            for c, s, q, n, e, z in rows
        ]

    def add_lecture(self, code: str, session_id: str, expires: float) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM lectures WHERE expires <= ?", (self.clock(),))
            db.execute(
                "INSERT INTO lectures (code, session, expires) VALUES (?, ?, ?)",
                (code, session_id, expires),
            )

    def end_lecture(self, code: str) -> None:
        with self._tx() as db:
            for table in ("lectures", "lecture_events", "lecture_answers"):
                db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))

    def lecture_event(self, code: str, seq: int, losses: int, body: str) -> None:
        """One event, and the lecture's newest number (Last-Event-ID after a restart)."""
        with self._tx() as db:
            db.execute(
                "UPDATE lectures SET seq = ?, losses = ? WHERE code = ?", (seq, losses, code)
            )
            db.execute("INSERT OR REPLACE INTO lecture_events VALUES (?, ?, ?)", (code, seq, body))
            if seq % 50 == 0:  # now and then, not on every event
                db.execute(
                    "DELETE FROM lecture_events WHERE code = ? AND seq <= ?",
                    (code, seq - EVENTS_KEPT),
                )

    def lecture_events(self, code: str, after: int) -> list[tuple[int, str]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, body FROM lecture_events WHERE code = ? AND seq > ? ORDER BY seq",
                (code, after),
            ).fetchall()
        return [(int(seq), body) for seq, body in rows]

    def lecture_quiz(self, code: str, quiz: dict[str, Any] | None) -> None:
        """A new question (its answers start over), its reveal, or none."""
        with self._tx() as db:
            db.execute(
                "UPDATE lectures SET quiz = ? WHERE code = ?",
                (None if quiz is None else _dumps(quiz), code),
            )
            if quiz is None or not quiz.get("revealed"):
                db.execute("DELETE FROM lecture_answers WHERE code = ?", (code,))

    def lecture_answer(self, code: str, voter: str, choice: str) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO lecture_answers VALUES (?, ?, ?)", (code, voter, choice)
            )

    def self_quiz(self, session_id: str, preset: str, revealed: bool = False) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO self_quizzes VALUES (?, ?, ?)",
                (session_id, preset, int(revealed)),
            )

    def self_quizzes(self) -> dict[str, tuple[str, bool]]:
        """The self-study questions of sessions still in the store."""
        with self._lock:
            rows = self._db.execute(
                "SELECT session, preset, revealed FROM self_quizzes "
                "WHERE session IN (SELECT id FROM logs)"
            ).fetchall()
        return {s: (p, bool(r)) for s, p, r in rows}

    # -- keeping it bounded ---------------------------------------------------------

    def sweep(self, live: Iterable[str] = (), room: int = 0) -> int:
        """Delete sessions idle past their retention and snapshots past their lifetime, then
        the oldest idle logs while there are too many (or too few to add ``room`` more) or they
        take too many bytes. Sessions in ``live`` (in memory now) are never taken. Returns how
        many logs went."""
        now = self.clock()
        keep = set(live)
        with self._reading:
            old = self._reader.execute(
                "SELECT id FROM logs WHERE (kind = 'session' AND used < ?) "
                "OR (kind = 'snapshot' AND used < ?)",
                (now - self.retain, now - self.snapshot_life),
            ).fetchall()
            doomed = [i for (i,) in old if i not in keep]
            count = self._reader.execute("SELECT count(*) FROM logs").fetchone()[0] - len(doomed)
            rows = self._reader.execute(
                "SELECT id, (SELECT coalesce(sum(length(body)), 0) FROM events WHERE log = id)"
                " + (SELECT coalesce(sum(length(state)), 0) FROM checkpoints WHERE log = id)"
                " FROM logs ORDER BY used"
            ).fetchall()
        gone = set(doomed)
        size = sum(nbytes for log_id, nbytes in rows if log_id not in gone)
        for log_id, nbytes in rows:
            if count + room <= self.max_logs and size <= self.max_bytes:
                break
            if log_id in keep or log_id in gone:
                continue
            doomed.append(log_id)
            gone.add(log_id)
            count -= 1
            size -= nbytes
        for log_id in doomed:
            self.delete(log_id)
        if room:  # making room for a new session: the quick part only
            return len(doomed)
        with self._tx() as db:  # rows a request wrote while its session was being deleted
            db.execute("DELETE FROM events WHERE log NOT IN (SELECT id FROM logs)")
            db.execute("DELETE FROM checkpoints WHERE log NOT IN (SELECT id FROM logs)")
        return len(doomed)

    def size(self, log_id: str) -> int:
        """Bytes of one log's events and checkpoints (what the caps count)."""
        with self._lock:
            row = self._db.execute(
                "SELECT (SELECT coalesce(sum(length(body)), 0) FROM events WHERE log = ?)"
                " + (SELECT coalesce(sum(length(state)), 0) FROM checkpoints WHERE log = ?)",
                (log_id, log_id),
            ).fetchone()
        return int(row[0])

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM logs").fetchone()[0])
