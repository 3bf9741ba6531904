"""Where sessions live between requests and across restarts: their logs, in SQLite (one file,
the default) or PostgreSQL (``LOOP_STEPPER_DATABASE_URL``, for several processes or machines).

A session is its log (``timeline.py``): the setup, the events, the head (where it stands after a
rewind) and keyframes. Every action's ``Change`` is written here, in one transaction, before
its answer goes out, so a server killed at any point (even ``kill -9``) comes back with every
acknowledged answer: the log replays to it. Snapshots are frozen copies of a log under their
own token, with their own lifetime.

Everything above uses the ``Database`` protocol below; ``open_database`` picks the database.

- ``logs.py``: the logs' SQL (both dialects), owner epochs (``claim``, ``NotOwner``)
- ``lectures.py``: the lecture tables
- ``schema.py``: the numbered migrations
- ``sqlite.py``, ``postgres.py``: connections, transactions, migrations' bookkeeping, and
  ``notify``/``listen`` (PostgreSQL's LISTEN/NOTIFY; nothing on SQLite)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, Unpack

from ..engine import LabState
from ..records import Change, Saved, Setup
from .lectures import EVENTS_KEPT, StoredLecture
from .logs import DAY, Limits, NoSuchLog, NotOwner, DatabaseUnavailable
from .schema import SCHEMA
from .sqlite import SqliteDatabase

__all__ = [
    "DAY",
    "EVENTS_KEPT",
    "SCHEMA",
    "Limits",
    "Listener",
    "NoSuchLog",
    "NotOwner",
    "SqliteDatabase",
    "Store",
    "DatabaseUnavailable",
    "StoredLecture",
    "open_database",
]


class Listener(Protocol):
    def close(self) -> None: ...


class Database(Protocol):
    """What the sessions and the lectures need of a database (both databases have it all)."""

    max_logs: int

    # sessions: owner epochs come from create/claim and go with every append
    def create(self, log_id: str, setup: Setup) -> int: ...
    def append(self, log_id: str, change: Change, owner: int | None = None) -> None: ...
    def claim(self, log_id: str) -> tuple[Saved, int]: ...
    def check_owner(self, log_id: str, owner: int) -> None: ...
    def load(self, log_id: str, kind: str = "session") -> Saved: ...
    def touch(self, log_ids: Iterable[str]) -> None: ...
    def keyframe(self, log_id: str, seq: int) -> LabState: ...
    def delete(self, log_id: str) -> bool: ...
    def exists(self, log_id: str) -> bool: ...
    def snapshot(self, log_id: str, token: str) -> None: ...
    def open_snapshot(self, token: str, log_id: str) -> None: ...
    def fork(self, log_id: str, new_id: str) -> None: ...
    def sweep(self, live: Iterable[str] = (), room: int = 0) -> int: ...
    def size(self, log_id: str) -> int: ...
    def count(self) -> int: ...
    def close(self) -> None: ...

    # lectures
    def lectures(self, now: float) -> list[StoredLecture]: ...
    def add_lecture(self, code: str, session_id: str, expires: float) -> None: ...
    def end_lecture(self, code: str) -> None: ...
    def lecture_event(self, code: str, seq: int, losses: int, body: str) -> None: ...
    def lecture_events(self, code: str, after: int) -> list[tuple[int, str]]: ...
    def lecture_quiz(self, code: str, quiz: dict[str, Any] | None) -> None: ...
    def lecture_answer(self, code: str, voter: str, choice: str) -> None: ...
    def self_quiz(self, session_id: str, preset: str, revealed: bool = False) -> None: ...
    def self_quizzes(self) -> dict[str, tuple[str, bool]]: ...

    # between processes (None / nothing on SQLite)
    def notify(self, channel: str, payload: str) -> None: ...
    def listen(self, channel: str, callback: Callable[[str], None]) -> Listener | None: ...


def open_database(where: str, **limits: Unpack[Limits]) -> Database:
    """A ``postgresql://`` (or ``postgres://``) URL opens the PostgreSQL database; anything else
    is a SQLite file's path (``:memory:`` keeps nothing)."""
    if where.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresDatabase  # psycopg is imported only when it is used

        return PostgresDatabase(where, **limits)
    return SqliteDatabase(where, **limits)
