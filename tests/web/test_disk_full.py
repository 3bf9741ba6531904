"""A full disk (issue 27 item 4), on the real server over HTTP, SQLite and PostgreSQL.

A write that fails for space answers 507 with a message the page shows; the session stays at
its last acknowledged moment (its copy in memory dropped, replayed from the log); reads go on;
once there is space again, writes go on without a restart.

How the disk fills: SQLite's ``PRAGMA max_page_count`` on the server's own connection, set to
the pages the file has (the real ``SQLITE_FULL``, "database or disk is full"). PostgreSQL: a
trigger on the events table raising the real SQLSTATE 53100 (``disk_full``) while a flag says
so, as PostgreSQL does when a table's file cannot grow; through psycopg and the pool as a real
one would come. Not tested: a PostgreSQL whose WAL disk fills (it stops, PANIC: a lost
database, 503) and a real full file system (the same ``SQLITE_FULL``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from app.db import DatabaseUnavailable, SqliteDatabase, StorageFull
from app.engine.optimizers import PLAIN_SGD
from app.log.records import Change, Setup
from app.main import create_app
from app.settings import Settings
from app.web.errors import ERROR_ANSWERS, STORAGE_FULL
from support.serve import schema_url, serve_app

UNLIMITED = 1_073_741_823  # SQLite's max_page_count default

PG_FULL = """
CREATE TABLE disk (is_full boolean NOT NULL);
INSERT INTO disk VALUES (false);
CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT is_full FROM disk) THEN
        RAISE EXCEPTION 'could not extend file: No space left on device'
            USING ERRCODE = 'disk_full';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER disk_full BEFORE INSERT OR UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION disk_full();
"""


class Disk:
    """The server's database and a way to fill its disk and free it again."""

    def __init__(self, app: FastAPI, url: str = "") -> None:
        self.app, self.url = app, url
        self.db = app.state.sessions.db
        if url:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(PG_FULL)

    def full(self, full: bool) -> None:
        if self.url:
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute("UPDATE disk SET is_full = %s", (full,))
            return
        db: SqliteDatabase = self.db
        with db._lock:  # the pragma is the connection's own: the server's writing one
            pages = db._db.execute("PRAGMA page_count").fetchone()[0]
            db._db.execute(f"PRAGMA max_page_count = {pages if full else UNLIMITED}")


@pytest.fixture(params=["sqlite", "postgres"])
def disk(request: pytest.FixtureRequest) -> Iterator[Disk]:
    data = tempfile.mkdtemp(prefix="loop-stepper-full-")
    url = ""
    if request.param == "postgres":
        url = schema_url(request.getfixturevalue("postgres_url"), f"full_{os.getpid()}")
    yield Disk(create_app(Settings(data=data, database_url=url)), url)


def numbers(session: dict[str, Any]) -> dict[str, Any]:
    """A Session but its id."""
    return {k: v for k, v in session.items() if k != "id"}


def test_a_full_disk_answers_507_keeps_the_session_and_recovers(disk: Disk) -> None:
    with serve_app(disk.app) as base, httpx.Client(base_url=base, timeout=60) as client:
        sid, twin = (client.post("/api/sessions", json={}).json()["id"] for _ in range(2))
        acknowledged = client.post(f"/api/sessions/{sid}/next").json()
        disk.full(True)
        refused = None
        for _ in range(3000):  # SQLite: lines until one needs a page the file may not grow by
            answer = client.post(f"/api/sessions/{sid}/next")
            if answer.status_code != 200:
                refused = answer
                break
            acknowledged = answer.json()
        assert refused is not None, "the disk never filled"
        assert refused.status_code == 507, refused.text
        assert refused.json() == {"detail": STORAGE_FULL}
        moment = acknowledged["moment"]

        # reads go on; the session is at its last acknowledged moment, its numbers exact
        again = client.get(f"/api/sessions/{sid}")
        assert again.status_code == 200, again.text
        assert numbers(again.json()) == numbers(acknowledged)
        assert client.get("/healthz").status_code == 200
        timeline = client.get(f"/api/sessions/{sid}/timeline")
        assert timeline.status_code == 200 and timeline.json()["moment"] == moment
        # another write: refused the same way, nothing damaged
        refused_again = client.post(f"/api/sessions/{sid}/next")
        assert (refused_again.status_code, refused_again.json()) == (507, {"detail": STORAGE_FULL})
        assert numbers(client.get(f"/api/sessions/{sid}").json()) == numbers(acknowledged)

        # space again: the line runs, once, from where it was; no restart
        disk.full(False)
        line = client.post(f"/api/sessions/{sid}/next")
        assert line.status_code == 200, line.text
        assert line.json()["moment"] == moment + 1
        for _ in range(moment + 1):  # a twin that never met a full disk: the same numbers
            same = client.post(f"/api/sessions/{twin}/next")
        assert numbers(line.json()) == numbers(same.json())
        made = client.post("/api/sessions", json={"scenario": "moons"})
        assert made.status_code == 201


def test_sqlite_full_is_storage_full_and_the_connection_writes_after(tmp_path: Path) -> None:
    """SQLITE_FULL rolls the transaction back itself: the error is ``StorageFull`` (not "no
    transaction is active" from our ROLLBACK), and the next transaction on the one connection
    begins and commits."""
    store = SqliteDatabase(tmp_path / "s.sqlite3")
    try:
        store.create("a", Setup("neuron", 0.05, 0, PLAIN_SGD))
        with store._lock:
            pages = store._db.execute("PRAGMA page_count").fetchone()[0]
            store._db.execute(f"PRAGMA max_page_count = {pages}")
        big = Change(keyframes=[(k, True, b"x" * 100_000) for k in range(1, 4)])
        with pytest.raises(StorageFull, match="disk is full"):
            store.append("a", big)
        assert not store._db.in_transaction
        with store._lock:
            store._db.execute(f"PRAGMA max_page_count = {UNLIMITED}")
        store.append("a", big)
        assert store.exists("a")
    finally:
        store.close()


def test_postgres_disk_full_is_storage_full_not_unreachable() -> None:
    """psycopg's ``DiskFull`` (SQLSTATE 53100) is ``StorageFull`` (a 507), any other
    OperationalError ``DatabaseUnavailable`` (a 503): the mapping's order matters, since
    ``DiskFull`` is an ``OperationalError``."""
    assert issubclass(psycopg.errors.DiskFull, psycopg.OperationalError)
    assert psycopg.errors.lookup("53100") is psycopg.errors.DiskFull
    assert ERROR_ANSWERS[StorageFull].status == 507
    assert ERROR_ANSWERS[DatabaseUnavailable].status == 503
    assert issubclass(StorageFull, DatabaseUnavailable)  # the sessions drop their copy for both


def next_session(lines: Iterator[str]) -> dict[str, Any]:
    """The Session of a lecture's next ``session`` event (its ``data:`` line)."""
    for line in lines:
        if line.startswith("data: "):
            session: dict[str, Any] = json.loads(line[6:])["session"]
            return session
    raise AssertionError("the stream ended")


def test_a_lecture_event_the_disk_refuses_costs_the_class_the_copy_not_the_line(
    postgres_url: str,
) -> None:
    """PostgreSQL keeps a lecture's events (and its whole view) for other processes'
    followers, after the line is saved: when that write fails for space, the line still
    answers (it was kept: before, a 507), this process's followers get the event, the stored
    view stays at the last event kept, and the next event after space returns is kept."""
    url = schema_url(postgres_url, f"full_lecture_{os.getpid()}")
    disk = Disk(create_app(Settings(data=tempfile.mkdtemp(), database_url=url)), url)
    with psycopg.connect(url, autocommit=True) as conn:  # the events table stays writable
        conn.execute("DROP TRIGGER disk_full ON events")
        conn.execute(
            "CREATE TRIGGER disk_full BEFORE INSERT OR UPDATE ON lecture_events "
            "FOR EACH ROW EXECUTE FUNCTION disk_full()"
        )
    with (
        serve_app(disk.app) as base,
        httpx.Client(base_url=base, timeout=20) as client,
        httpx.Client(base_url=base, timeout=20) as follower,
    ):
        sid = client.post("/api/sessions", json={}).json()["id"]
        code = client.post(f"/api/sessions/{sid}/lecture").json()["code"]
        assert client.post(f"/api/sessions/{sid}/next").json()["moment"] == 1
        with follower.stream("GET", f"/api/lectures/{code}/events") as stream:
            lines = stream.iter_lines()
            assert next_session(lines)["moment"] == 1
            disk.full(True)
            line = client.post(f"/api/sessions/{sid}/next")
            assert line.status_code == 200, line.text
            assert line.json()["moment"] == 2
            assert next_session(lines) == {k: v for k, v in line.json().items() if k != "id"} | {
                "quiz": None,
                "prediction": None,
            }
        assert client.get(f"/api/sessions/{sid}").json()["moment"] == 2
        assert client.get(f"/api/lectures/{code}").json()["moment"] == 1  # the stored view
        disk.full(False)
        assert client.post(f"/api/sessions/{sid}/next").json()["moment"] == 3
        assert client.get(f"/api/lectures/{code}").json()["moment"] == 3
