"""The SQLite store: logs written and read back, snapshots frozen, retention and caps."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.engine.optimizers import PLAIN_SGD
from app.sessions import Journal
from app.store import DAY, SCHEMA, NoSuchLog, SqliteStore
from app.timeline import Setup, Timeline

NEURON = Setup("neuron", 0.05, 0, PLAIN_SGD, program=("forward", "loss", "zero_grad",
                                                      "backward", "step"))  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def session(store: SqliteStore, log_id: str, iterations: int = 1) -> Timeline:
    store.create(log_id, NEURON)
    timeline = Timeline(NEURON, Journal(store, log_id), every=3)
    timeline.run(iterations)
    store.append(log_id, timeline.drain())
    return timeline


def test_a_log_reads_back_as_written(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    timeline = session(store, "a", 4)
    timeline.rewind(7)
    store.append("a", timeline.drain())
    saved = store.load("a")
    assert saved.setup == NEURON and saved.head == timeline.head and saved.first == 0
    assert [e.to_json() for e in saved.events] == [e.to_json() for e in timeline.events]
    assert [seq for seq, _ in saved.checkpoints] == sorted(
        s for s in timeline.checkpoints if s >= 0
    )
    again = Timeline.restored(saved, Journal(store, "a"))
    assert again.snapshot() == timeline.snapshot()
    with sqlite3.connect(tmp_path / "s.sqlite3") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(NoSuchLog):
        store.load("nope")
    stray = Timeline(NEURON)
    stray.run(1)
    stray.rewind(2)
    stray.next()  # from a past moment: the store must cut, and finds no such log
    with pytest.raises(NoSuchLog):
        store.append("nope", stray.drain())


def test_a_snapshot_is_frozen_at_the_head(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    timeline = session(store, "a", 3)
    timeline.rewind(6)
    store.append("a", timeline.drain())
    store.snapshot("a", "token")
    timeline.run(2)  # the original goes on; the snapshot does not
    store.append("a", timeline.drain())
    store.open_snapshot("token", "b")
    copy = store.load("b")
    assert copy.head == timeline._seq_of(6) and len(copy.events) == copy.head + 1
    assert all(seq < copy.head for seq, _ in copy.checkpoints)
    with pytest.raises(NoSuchLog):
        store.load("token")  # a snapshot is no session: it cannot be driven
    with pytest.raises(NoSuchLog):
        store.open_snapshot("missing", "c")


def test_retention_and_caps_take_the_oldest_idle_first(tmp_path: Path) -> None:
    clock = Clock()
    store = SqliteStore(tmp_path / "s.sqlite3", retain_days=7, snapshot_days=365, clock=clock)
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

    capped = SqliteStore(tmp_path / "c.sqlite3", max_logs=3, clock=clock)
    for i in range(5):
        clock.now += 1
        session(capped, f"s{i}")
    capped.sweep(live=["s0"])
    assert [capped.exists(f"s{i}") for i in range(5)] == [True, False, False, True, True]
    size = capped.size("s4")
    small = SqliteStore(tmp_path / "c.sqlite3", max_bytes=size * 2, clock=clock)
    small.sweep()
    assert small.count() == 2 and small.exists("s4") and small.exists("s3")
