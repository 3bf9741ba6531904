"""Sessions in memory over the store: ids, the memory cap, idle sessions read back, deletion."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.optimizers import PLAIN_SGD
from app.sessions import SessionStore, StoreFull, UnknownSession
from app.store import SqliteStore
from app.timeline import Setup

NEURON = Setup("neuron", 0.05, 0, PLAIN_SGD, program=("forward", "loss", "zero_grad",
                                                      "backward", "step"))  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def store(tmp_path: Path, **kw: float) -> SqliteStore:
    return SqliteStore(tmp_path / "s.sqlite3", **kw)  # type: ignore[arg-type]


def test_ids_are_long_and_distinct(tmp_path: Path) -> None:
    sessions = SessionStore(store(tmp_path), 100, 60)
    ids = {sessions.create(NEURON).id for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) >= 22 for i in ids)  # 16 random bytes, url-safe base64


def test_memory_cap_and_idle_sessions_leave_memory_not_the_store(tmp_path: Path) -> None:
    clock = Clock()
    sessions = SessionStore(store(tmp_path), 2, idle_timeout=60, clock=clock)
    a = sessions.create(NEURON)
    a.timeline.run(1)
    sessions.save(a)
    clock.now = 30
    b = sessions.create(NEURON)
    c = sessions.create(NEURON)  # memory holds 2: a, the least recently used, leaves it
    assert len(sessions) == 2 and a.gone and sessions.live(a.id) is None
    again = sessions.get(a.id)  # read back from its log
    assert again is not a and again.timeline.snapshot() == a.timeline.snapshot()
    assert again.timeline.snapshot()["params"][0]["value"][0][0] == pytest.approx(1.175)
    clock.now = 200  # everyone idle past the timeout
    assert sessions.evict_idle() == 2 and len(sessions) == 0
    assert sessions.get(b.id).timeline.moments == 0 and sessions.get(c.id).id == c.id


def test_a_busy_session_never_leaves_memory(tmp_path: Path) -> None:
    sessions = SessionStore(store(tmp_path), 1, idle_timeout=60)
    a = sessions.create(NEURON)
    with a.lock, pytest.raises(StoreFull):
        sessions.create(NEURON)  # the only session in memory is in use
    assert not a.gone


def test_the_store_cap_takes_the_oldest_idle_first(tmp_path: Path) -> None:
    sessions = SessionStore(store(tmp_path, max_logs=3), 1, idle_timeout=60)
    made = [sessions.create(NEURON).id for _ in range(5)]  # each new one pushes one out
    with pytest.raises(UnknownSession):
        sessions.get(made[0])
    assert sessions.get(made[-1]).id == made[-1] and sessions.store.count() <= 3


def test_delete(tmp_path: Path) -> None:
    sessions = SessionStore(store(tmp_path), 5, idle_timeout=60)
    a = sessions.create(NEURON)
    sessions.delete(a.id)
    assert a.gone
    with pytest.raises(UnknownSession):
        sessions.get(a.id)
    with pytest.raises(UnknownSession):
        sessions.delete("nope")
