"""The PostgreSQL database (``LOOP_STEPPER_DATABASE_URL=postgresql://...``): the same tables and
SQL as SQLite's (``logs.py``, ``lectures.py``), for several processes on several machines.

psycopg 3 with a ``psycopg_pool.ConnectionPool`` of autocommit connections: a line at the end
of the log is one statement, one round trip; anything else is one transaction. Migrations are
``schema.py``'s, numbered as SQLite's, recorded in a ``schema_version`` table and run under an
advisory lock (processes starting together migrate once).

Between processes (lectures across servers) the database offers PostgreSQL's LISTEN/NOTIFY:

- ``notify(channel, payload)`` publishes ``payload`` (text, under 8000 bytes) to every process
  listening on ``channel``, itself included; it is delivered once the statement commits.
- ``listen(channel, callback) -> Listener`` opens a connection of its own and calls
  ``callback(payload)`` in a thread of its own for each notification, in the order sent, until
  ``PostgresListener.close()``; an exception in the callback is logged and listening goes on. If the
  connection is lost it connects again and listens on; what was sent meanwhile is missed, so a
  listener that must miss nothing re-reads its table then (``on_reconnect``, called in
  that thread, is the place).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Self, Unpack

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from app.db.logs import DatabaseUnavailable, Limits, LogDatabase, StorageFull
from app.db.schema import POSTGRES, SCHEMA, statements, too_new
from app.db.shared import SharedLectures
from app.db.sql import Cursor

log = logging.getLogger(__name__)
MIGRATION_LOCK = 0x100957E9  # pg_advisory_xact_lock's key: one process migrates at a time


@functools.lru_cache(maxsize=256)
def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


class _Qmark:
    """A psycopg cursor that reads the database's ``?`` placeholders."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Self:
        self._cursor.execute(_pg(sql), params)
        return self

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> None:
        self._cursor.executemany(_pg(sql), params)

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()


class PostgresDatabase(SharedLectures, LogDatabase):
    """A pool of connections: requests on different sessions write at the same time."""

    LOCK_ROW = " FOR SHARE"  # a claim (UPDATE of the row) waits for appends in flight

    def __init__(self, url: str, *, pool_size: int = 8, **limits: Unpack[Limits]) -> None:
        super().__init__(**limits)
        self.url = url
        self._pool = ConnectionPool(
            url,
            min_size=min(2, pool_size),
            max_size=pool_size,
            kwargs={"autocommit": True},
            name="loop-stepper",
            open=False,
        )
        self._pool.open(wait=True, timeout=30)
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    def _migrate(self) -> None:
        with self._tx() as db:
            db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            version = 0 if row is None else int(row[0])
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (0)")
            too_new(version)  # no backup copy here: docs/deploy.md says pg_dump before upgrading
            for target in range(version + 1, SCHEMA + 1):
                for statement in statements(target, POSTGRES):
                    db.execute(statement)
                db.execute("UPDATE schema_version SET version = ?", (target,))

    def schema_version(self) -> int:
        with self._read() as db:
            return int(db.execute("SELECT version FROM schema_version").fetchone()[0])

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection. A database that cannot be reached, or that drops the connection
        (a restart, a failover), is ``DatabaseUnavailable``; the pool discards the broken one.
        A write that fails for space (``disk_full``) is ``StorageFull``."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.errors.DiskFull as error:  # SQLSTATE 53100: the connection is fine
            raise StorageFull(f"the database's disk is full ({error})".strip()) from error
        except (psycopg.OperationalError, PoolTimeout) as error:
            raise DatabaseUnavailable(f"the database is unreachable ({error})".strip()) from error

    @contextmanager
    def _tx(self) -> Iterator[Cursor]:
        with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
            yield _Qmark(cursor)

    @contextmanager
    def _one_snapshot(self) -> Iterator[Cursor]:
        # READ COMMITTED (the default) reads a fresh snapshot per statement: a copy made while
        # the source's owner appends could mix two moments of its log
        with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield _Qmark(cursor)

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        with self._connection() as conn, conn.cursor() as cursor:
            yield _Qmark(cursor)

    def _write_one(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._connection() as conn:
            return conn.execute(_pg(sql), params).rowcount

    def close(self) -> None:
        self._pool.close()

    # -- between processes -----------------------------------------------------------

    def shared(self) -> Self:
        return self

    def notify(self, channel: str, payload: str) -> None:
        with self._connection() as conn:
            conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    def listen(self, channel: str, callback: Callable[[str], None]) -> PostgresListener:
        return PostgresListener(self.url, channel, callback)


class PostgresListener:
    """A connection LISTENing on one channel, and the thread that hands its notifications to
    ``callback`` (see the module's docstring)."""

    def __init__(self, url: str, channel: str, callback: Callable[[str], None]) -> None:
        self.url, self.channel, self.callback = url, channel, callback
        self.on_reconnect: Callable[[], None] | None = None
        self._stop = threading.Event()
        self._conn = self._connect()  # the first connection here: a bad URL fails the caller
        self._thread = threading.Thread(target=self._run, name=f"listen {channel}", daemon=True)
        self._thread.start()

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.url, autocommit=True)
        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        return conn

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = self._conn
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = self._connect()
                    if self.on_reconnect is not None:
                        self.on_reconnect()
                for note in conn.notifies(timeout=0.25):
                    try:
                        self.callback(note.payload)
                    except Exception:  # one bad payload must not end the listening
                        log.exception("listener on %s: the callback failed", self.channel)
                    if self._stop.is_set():
                        break
            except psycopg.OperationalError:
                if conn is not None:
                    conn.close()
                conn = None
                self._stop.wait(0.5)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
