"""The SQLite database: one file, the default (``LOOP_STEPPER_DATA``/sessions.sqlite3).

WAL mode with ``synchronous=NORMAL`` survives a killed process (the OS holds what was written);
only a power cut may lose the newest writes. Several processes on one machine may share the
file (WAL; a write waits up to 5 s for another's): their owner epochs keep each session with
the process that replayed it last. There is no one to notify: ``notify`` does nothing and
``listen`` returns None.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Unpack

from .logs import Limits, LogDatabase
from .schema import SCHEMA, SQLITE, statements
from .sql import Cursor


class SqliteDatabase(LogDatabase):
    """One connection, one lock: SQLite writes one transaction at a time anyway, and each of
    ours is a few rows (a line at the newest moment is one event row, one statement)."""

    def __init__(self, path: str | Path, **limits: Unpack[Limits]) -> None:
        super().__init__(**limits)
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
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
                for statement in statements(target, SQLITE):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {target}")

    @contextmanager
    def _tx(self) -> Iterator[Cursor]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db.cursor()
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        with self._lock:
            yield self._db.cursor()

    @contextmanager
    def _scan(self) -> Iterator[Cursor]:
        with self._reading:
            yield self._reader.cursor()

    def _write_one(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._lock:
            return self._db.execute(sql, params).rowcount

    def close(self) -> None:
        with self._lock:
            if self._reader is not self._db:
                self._reader.close()
            self._db.close()

    # -- between processes: none here ---------------------------------------------------

    def notify(self, channel: str, payload: str) -> None:
        """Nothing: the processes sharing a SQLite file have no channel between them."""

    def listen(self, channel: str, callback: Callable[[str], None]) -> None:
        """None: nothing is ever published (one process holds what it shows)."""
        return None
