"""The SQLite database: one file, the default (``LOOP_STEPPER_DATA``/sessions.sqlite3).

WAL mode with ``synchronous=NORMAL`` survives a killed process (the OS holds what was written);
only a power cut may lose the newest writes. The WAL is copied back into the file (a
checkpoint, with its fsyncs) by a thread of its own every ``CHECKPOINT_EVERY`` seconds, never
by the commit that happens to fill it: that commit is a student's line on the event loop, and
every click waits behind it. Several processes on one machine may share the file (WAL; a
write waits up to 5 s for another's): their owner epochs keep each session with the process
that replayed it last. There is no one to notify: ``notify`` does nothing and ``listen``
returns None.

Every process serving the file holds a shared ``flock`` on ``<file>.lock`` beside it while it is
open; ``loop-stepper restore`` takes it exclusively, so it is refused while any server uses the
file and a server does not start in the middle of a restore (``app/db/backup.py``). The kernel
lets the lock go with the process, even after ``kill -9``: no stale lock to clean up.

A file from an older schema is copied beside itself (``<file>.v<N>.bak``, SQLite's backup
API) before it is migrated; one from a newer schema is refused (``SchemaTooNew``).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Unpack

from app.db.logs import DatabaseUnavailable, Limits, LogDatabase, StorageFull
from app.db.schema import SCHEMA, SQLITE, statements, too_new
from app.db.sql import Cursor

CHECKPOINT_EVERY = 1.0  # seconds between checkpoints (a class's clicks fill ~1 MB of WAL a s)
WAL_LIMIT = 64 * 1024**2  # bytes the WAL file is cut back to after a checkpoint
CUT_WAIT_MS = 100  # how long a WAL's cut waits for another process's reader (clicks wait too)


def wal_size(path: str) -> int:
    """Bytes of ``path``'s write-ahead log (0 when there is none)."""
    try:
        return os.stat(f"{path}-wal").st_size
    except FileNotFoundError:
        return 0


class DatabaseBusy(DatabaseUnavailable):
    """The file's lock is held the other way: a restore while it is served, or the reverse."""


def lock_file(path: str | Path) -> str:
    return f"{path}.lock"


def hold_lock(path: str | Path, exclusive: bool) -> int:
    """An open descriptor holding ``path``'s lock (shared: a server; exclusive: a restore),
    or ``DatabaseBusy`` at once, never a wait. Closing the descriptor lets it go."""
    fd = os.open(lock_file(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DatabaseBusy(
            f"{path} is in use by a running server; stop it first"
            if exclusive
            else f"{path} is being restored (loop-stepper restore); start again when it is done"
        ) from None
    return fd


class FairLock:
    """A lock granted in the order it was asked for, the event loop's thread first.

    ``threading.Lock`` lets the thread that lets it go take it straight back: two threads
    copying logs for a class's forks would keep the instructor's line out for seconds. Here each
    waits its turn; and a line answered on the event loop (which every other request waits for
    meanwhile) waits only for the transaction under way, not for the threads queued before it."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._queue: deque[threading.Lock] = deque()
        self._urgent: deque[threading.Lock] = deque()  # the event loop's thread
        self._held = False

    def __enter__(self) -> None:
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn = threading.Lock()
            turn.acquire()
            on_loop = asyncio._get_running_loop() is not None
            (self._urgent if on_loop else self._queue).append(turn)
        turn.acquire()  # let go by __exit__: the lock is handed over, still held

    def __exit__(self, *_: object) -> None:
        with self._mutex:
            if self._urgent:
                self._urgent.popleft().release()
            elif self._queue:
                self._queue.popleft().release()
            else:
                self._held = False


@contextmanager
def space() -> Iterator[None]:
    """SQLite's ``SQLITE_FULL`` ("database or disk is full": the disk, or ``max_page_count``)
    as ``StorageFull``."""
    try:
        yield
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode == sqlite3.SQLITE_FULL:
            raise StorageFull(f"the database's disk is full ({error})") from error
        raise


class SqliteDatabase(LogDatabase):
    """One connection, one lock: SQLite writes one transaction at a time anyway, and each of
    ours is a few rows (a line at the newest moment is one event row, one statement)."""

    def __init__(self, path: str | Path, **limits: Unpack[Limits]) -> None:
        super().__init__(**limits)
        self.path = str(path)
        self._held: int | None = None
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._held = hold_lock(self.path, exclusive=False)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = FairLock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=OFF")
        try:
            self._migrate()
        except BaseException:
            self.close_files()
            raise
        self._stop = threading.Event()
        if self.path != ":memory:":
            self._db.execute("PRAGMA wal_autocheckpoint=0")  # see the module's docstring
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            threading.Thread(target=self._checkpoints, name="checkpoints", daemon=True).start()
        # the sweep's long reads on a connection of their own (WAL lets them run beside the
        # writes), so a line's write never waits for a scan of every log
        self._reader = (
            self._db
            if self.path == ":memory:"
            else sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        )
        self._reading: FairLock | threading.Lock = (
            self._lock if self._reader is self._db else threading.Lock()
        )

    def _migrate(self) -> None:
        found = self._db.execute("PRAGMA user_version").fetchone()[0]
        too_new(found)
        if 0 < found < SCHEMA and self.path != ":memory:":
            # the old file as it was, in case the new release must be rolled back
            copy = sqlite3.connect(f"{self.path}.v{found}.bak")
            try:
                self._db.backup(copy)
            finally:
                copy.close()
        with self._tx() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            too_new(version)
            for target in range(version + 1, SCHEMA + 1):
                for statement in statements(target, SQLITE):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {target}")

    @contextmanager
    def _tx(self) -> Iterator[Cursor]:
        with self._lock, space():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db.cursor()
                self._db.execute("COMMIT")
            except BaseException:
                # SQLITE_FULL may have rolled it back already; a failed COMMIT may not have
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        with self._lock, space():  # (a read may write: a touch)
            yield self._db.cursor()

    @contextmanager
    def _scan(self) -> Iterator[Cursor]:
        with self._reading:
            yield self._reader.cursor()

    def _write_one(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._lock, space():
            return self._db.execute(sql, params).rowcount

    def _checkpoints(self) -> None:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            while not self._stop.wait(CHECKPOINT_EVERY):
                try:
                    # PASSIVE: copies what no reader still needs, never waits for a writer
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    if wal_size(self.path) > WAL_LIMIT:
                        self._cut_wal(db)
                except sqlite3.OperationalError as error:
                    if error.sqlite_errorcode != sqlite3.SQLITE_FULL:
                        raise
                    # a full disk: the WAL keeps the pages; copied once there is space again
        except sqlite3.Error:
            pass  # the file is gone (a test's temporary directory): nothing left to copy
        finally:
            db.close()

    def _cut_wal(self, db: sqlite3.Connection) -> None:
        """The WAL back to empty: under a steady stream of writes a PASSIVE checkpoint never
        finds the moment when no reader holds the log's start, and the file grows (to 1 GB in
        a 25-minute soak of 300 students). With this process's reads and writes held (a click
        waits for the few frames PASSIVE has not copied yet, and a truncate) a TRUNCATE
        checkpoint copies the rest and cuts the file; another process's reader makes it wait
        ``CUT_WAIT_MS`` at most, then leave the file as it is until the next turn."""
        with self._reading, self._lock:
            db.execute(f"PRAGMA busy_timeout={CUT_WAIT_MS}")
            try:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                db.execute("PRAGMA busy_timeout=5000")

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            if self._reader is not self._db:
                self._reader.close()
            self._db.close()
        self.close_files()

    def close_files(self) -> None:
        self._db.close()
        if self._held is not None:
            os.close(self._held)  # the server's lock goes last: the file is closed by then
            self._held = None

    # -- between processes: none here ---------------------------------------------------

    def shared(self) -> None:
        """None: one process holds what it shows."""
        return None

    def notify(self, channel: str, payload: str) -> None:
        """Nothing: the processes sharing a SQLite file have no channel between them."""

    def listen(self, channel: str, callback: Callable[[str], None]) -> None:
        """None: nothing is ever published (one process holds what it shows)."""
        return None
