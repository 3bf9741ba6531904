"""The store's contract, on SQLite and on PostgreSQL: logs written and read back, snapshots
frozen, retention and caps, owner epochs, notifications."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from pydantic import ValidationError

from app.db import DAY, SCHEMA, Database, NoSuchLog, NotOwner, SqliteDatabase
from app.engine.optimizers import PLAIN_SGD
from app.log.records import Setup
from app.log.timeline import Timeline
from app.sessions.journal import Journal
from support.clock import Clock

Make = Callable[..., Database]

NEURON = Setup("neuron", 0.05, 0, PLAIN_SGD, program=("forward", "loss", "zero_grad",
                                                      "backward", "step"))  # fmt: skip


def session(store: Database, log_id: str, iterations: int = 1) -> Timeline:
    store.create(log_id, NEURON)
    timeline = Timeline(NEURON, Journal(store, log_id), every=3)
    timeline.run(iterations)
    store.append(log_id, timeline.drain())
    return timeline


def test_a_log_reads_back_as_written(make_db: Make, tmp_path: Path) -> None:
    store = make_db()
    timeline = session(store, "a", 4)
    timeline.rewind(7)
    store.append("a", timeline.drain())
    saved = store.load("a")
    assert saved.setup == NEURON and saved.head == timeline.head and saved.first == 0
    assert [e.to_json() for e in saved.events] == [e.to_json() for e in timeline.events]
    assert [seq for seq, _ in saved.keyframes] == sorted(s for s in timeline.keyframes if s >= 0)
    again = Timeline.restored(saved, Journal(store, "a"))
    assert again.view() == timeline.view()
    if isinstance(store, SqliteDatabase):
        with sqlite3.connect(tmp_path / "s.sqlite3") as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    else:
        from app.db.postgres import PostgresDatabase

        assert isinstance(store, PostgresDatabase)
        assert store.schema_version() == SCHEMA == 10
        second = make_db()
        assert isinstance(second, PostgresDatabase)
        assert second.schema_version() == SCHEMA  # a second process migrates nothing
    with pytest.raises(NoSuchLog):
        store.load("nope")
    stray = Timeline(NEURON)
    stray.run(1)
    stray.rewind(2)
    stray.next()  # from a past moment: the store must cut, and finds no such log
    with pytest.raises(NoSuchLog):
        store.append("nope", stray.drain())


def test_a_snapshot_is_frozen_at_the_head(make_db: Make) -> None:
    store = make_db()
    timeline = session(store, "a", 3)
    timeline.rewind(6)
    store.append("a", timeline.drain())
    store.snapshot("a", "token")
    timeline.run(2)  # the original goes on; the snapshot does not
    store.append("a", timeline.drain())
    store.open_snapshot("token", "b")
    copy = store.load("b")
    assert copy.head == timeline._seq_of(6) and len(copy.events) == copy.head + 1
    assert all(seq < copy.head for seq, _ in copy.keyframes)
    with pytest.raises(NoSuchLog):
        store.load("token")  # a snapshot is no session: it cannot be driven
    with pytest.raises(NoSuchLog):
        store.open_snapshot("missing", "c")


def test_retention_and_caps_take_the_oldest_idle_first(make_db: Make) -> None:
    clock = Clock()
    store = make_db("s", retain_days=7, snapshot_days=365, clock=clock)
    session(store, "old")
    store.snapshot("old", "shared")
    clock.now += 3 * DAY
    session(store, "live")
    session(store, "recent")
    clock.now += 5 * DAY  # "old" idle 8 days, the others 5
    assert store.sweep(live=["live"]) == 1
    assert not store.exists("old") and store.exists("recent") and store.exists("live")
    store.open_snapshot("shared", "from-snapshot")  # a snapshot outlives its session
    clock.now += 400 * DAY
    assert store.sweep(live=["live"]) == 3  # recent, the snapshot, the session opened from it
    assert store.exists("live") and store.count() == 1

    capped = make_db("c", max_logs=3, clock=clock)
    for i in range(5):
        clock.now += 1
        session(capped, f"s{i}")
    capped.sweep(live=["s0"])
    assert [capped.exists(f"s{i}") for i in range(5)] == [True, False, False, True, True]
    size = capped.size("s4")
    small = make_db("c", max_bytes=size * 2, clock=clock)
    small.sweep()
    assert small.count() == 2 and small.exists("s4") and small.exists("s3")


def test_a_claim_fences_off_the_previous_owner(make_db: Make) -> None:
    """Two processes on one store: the one that claimed last is the only one that writes."""
    a, b = make_db(), make_db()  # two connections to one database
    assert a.create("s", NEURON) == 1
    mine = Timeline(NEURON, Journal(a, "s"), every=3)
    mine.run(1)
    a.append("s", mine.drain(), owner=1)
    saved, owner = b.claim("s")
    assert owner == 2 and len(saved.events) == 5 and saved.setup == NEURON
    stale = Timeline.restored(a.load("s"), Journal(a, "s"))
    stale.next()  # a line at the end: the one-statement path
    with pytest.raises(NotOwner, match="owner epoch 2, this process holds 1"):
        a.append("s", stale.drain(), owner=1)
    stale.rewind(2)
    stale.next()  # from the past: the transaction path
    with pytest.raises(NotOwner):
        a.append("s", stale.drain(), owner=1)
    assert len(b.load("s").events) == 5  # nothing of a's was written
    theirs = Timeline.restored(saved, Journal(b, "s"))
    theirs.next()
    b.append("s", theirs.drain(), owner=2)
    assert len(a.load("s").events) == 6
    with pytest.raises(NoSuchLog):
        b.claim("missing")
    with pytest.raises(NoSuchLog):
        b.append("missing", theirs.drain() or stale.drain(), owner=2)


def test_claims_and_appends_from_two_threads_never_interleave(make_db: Make) -> None:
    """Appends race a claim: each either landed before it (and the claim's log has it) or
    was refused; none is written after the claim read the log."""
    a, b = make_db(), make_db()
    a.create("s", NEURON)
    lines = Timeline(NEURON, Journal(a, "s"), every=1000)
    written: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            lines.next()
            change = lines.drain()
            try:
                a.append("s", change, owner=1)
            except NotOwner:
                return
            written.append(change.events[-1][0])

    thread = threading.Thread(target=writer)
    thread.start()
    while len(written) < 20:
        stop.wait(0.001)
    saved, _ = b.claim("s")
    stop.set()
    thread.join()
    assert len(saved.events) == len(written) == len(b.load("s").events)


def test_notifications_reach_every_listener(make_db: Make) -> None:
    a, b = make_db(), make_db()
    got: list[str] = []
    arrived = threading.Event()

    def heard(payload: str) -> None:
        got.append(payload)
        if len(got) == 3:
            arrived.set()

    listener = b.listen("lecture", heard)
    if listener is None:  # SQLite: one process, nothing to publish between processes
        a.notify("lecture", "nobody hears this")
        assert make_db.kind == "sqlite"  # type: ignore[attr-defined]
        return
    try:
        for payload in ("one", "two", "three"):
            a.notify("lecture", payload)
        assert arrived.wait(10)
        assert got == ["one", "two", "three"]
        # its connection lost (the server ended it): it connects again and listens on
        back = threading.Event()
        listener.on_reconnect = back.set  # type: ignore[attr-defined]
        with psycopg.connect(a.url) as db:  # type: ignore[attr-defined]
            ended = db.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE query LIKE 'LISTEN%'"
            ).fetchone()
        assert ended == (1,) and back.wait(10)
        arrived.clear()
        got.clear()
        for payload in ("four", "five", "six"):
            a.notify("lecture", payload)
        assert arrived.wait(10) and got == ["four", "five", "six"]
    finally:
        listener.close()


def test_the_database_url_chooses_the_store(tmp_path: Path, postgres_url: str) -> None:
    from app.db.postgres import PostgresDatabase
    from app.main import database_for
    from app.settings import Settings

    sqlite = database_for(Settings(data=str(tmp_path)))
    postgres = database_for(Settings(data=str(tmp_path), database_url=f" {postgres_url} "))
    try:
        assert isinstance(sqlite, SqliteDatabase) and sqlite.path == f"{tmp_path}/sessions.sqlite3"
        assert isinstance(postgres, PostgresDatabase) and postgres.url == postgres_url
    finally:
        sqlite.close()
        postgres.close()
    with pytest.raises(ValidationError, match="database_url is a postgresql:// URL"):
        Settings(database_url="mysql://db/sessions")


def test_a_class_question_takes_votes_only_while_its_round_is_open(make_db: Make) -> None:
    """Issue 18's tables on both dialects: a vote is taken only in the open round (an INSERT
    that checks), replaced by the same voter's next; the counts per round; a "which bug"
    question keeps its answers when it closes; the report outlives the lecture, and a new
    lecture on the session starts a new one."""
    store = make_db()
    session(store, "s")
    store.add_lecture("CODE234", "s", 1e12)
    body = {"question": {"prompt": "?"}, "answer": ["no"], "explanation": "", "choices": []}
    n = store.poll_ask("CODE234", "s", 3, "backward", "raises", body)
    assert n == 1 and store.poll_of("CODE234") == {
        "n": 1, "moment": 3, "line": "backward", "kind": "raises", "round": 1, "open": True,
        "body": body,
    }  # fmt: skip
    assert store.poll_vote("CODE234", 1, 1, "v1", "yes")
    assert store.poll_vote("CODE234", 1, 1, "v1", "no")  # replaces
    assert store.poll_vote("CODE234", 1, 1, "v2", "no")
    assert not store.poll_vote("CODE234", 1, 2, "v3", "no")  # round 2 is not open yet
    store.poll_update("CODE234", 1, 2, True, body)
    assert not store.poll_vote("CODE234", 1, 1, "v3", "no")  # round 1 is over
    assert store.poll_vote("CODE234", 1, 2, "v1", "no")
    assert store.poll_counts("CODE234", 1) == [{"no": 2}, {"no": 1}]
    assert store.poll_votes("CODE234", 1) == [{"v1": "no", "v2": "no"}, {"v1": "no"}]
    store.poll_update("CODE234", 1, 2, False, body)
    assert not store.poll_vote("CODE234", 1, 2, "v2", "no")  # revealed
    store.poll_ask("CODE234", "s", 4, "", "bug", {"prompt": "Which bug is this?", "answer": None})
    store.lecture_vote("CODE234", "v1", "zeros")
    store.lecture_vote("CODE234", "v2", "correct")
    store.quiz_closed("CODE234", "zeros")
    store.end_lecture("CODE234")
    rows = store.poll_report("s")
    assert [(r["n"], r["kind"], r["open"], r["rounds"]) for r in rows] == [
        (1, "raises", False, [{"no": 2}, {"no": 1}]),
        (2, "bug", False, [{"zeros": 1, "correct": 1}]),
    ]
    assert rows[1]["body"]["answer"] == "zeros"
    store.add_lecture("CODE567", "s", 1e12)
    assert store.poll_report("s") == []


def test_sqlite_copies_its_wal_back_in_a_thread_of_its_own(tmp_path: Path) -> None:
    """A commit (a student's line, on the event loop) never checkpoints; the thread does, within
    a few seconds: the file grows by what the WAL held."""
    path = tmp_path / "wal.sqlite3"
    store = SqliteDatabase(path)
    try:
        assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        written = path.stat().st_size
        session(store, "a", iterations=200)
        deadline = time.monotonic() + 10
        while path.stat().st_size == written and time.monotonic() < deadline:
            time.sleep(0.1)
        assert path.stat().st_size > written
        assert any(t.name == "checkpoints" for t in threading.enumerate())
    finally:
        store.close()


def test_the_wal_is_cut_back_once_a_reader_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long read (the sweep's scan; here another connection's) pins the WAL's start, so it
    grows past its limit; once the reader is gone the checkpoint thread cuts it back without
    waiting for a later write to restart the log (issue 27's long day: 1 GB before)."""
    from app.db import sqlite as module

    monkeypatch.setattr(module, "WAL_LIMIT", 256 * 1024)
    monkeypatch.setattr(module, "CHECKPOINT_EVERY", 0.05)
    path = str(tmp_path / "s.sqlite3")
    store = SqliteDatabase(path)
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM logs").fetchall()  # a snapshot: the WAL is pinned
        n = 0
        while module.wal_size(path) < 1024**2:
            session(store, f"s{n}", 3)
            n += 1
        reader.execute("COMMIT")
        deadline = time.monotonic() + 10
        while module.wal_size(path) > 256 * 1024 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert module.wal_size(path) <= 256 * 1024
        assert store.load(f"s{n - 1}") is not None  # every log still there, read back
    finally:
        reader.close()
        store.close()
