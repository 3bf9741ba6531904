"""Sessions in memory over the store (SQLite and PostgreSQL): ids, the memory cap, idle sessions
read back, deletion, and two processes taking one session in turns (owner epochs)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from app.db import Database, NoSuchLog
from app.engine.optimizers import PLAIN_SGD
from app.log.records import Change, Setup
from app.log.timeline import SAVE_EVERY, Timeline
from app.sessions.copies import Copies
from app.sessions.live import LiveSession, LiveSessions, ServerFull, UnknownSession
from support.clock import Clock

Make = Callable[..., Database]

NEURON = Setup("neuron", 0.05, 0, PLAIN_SGD, program=("forward", "loss", "zero_grad",
                                                      "backward", "step"))  # fmt: skip


def test_ids_are_long_and_distinct(make_db: Make) -> None:
    sessions = LiveSessions(make_db(), 100, 60)
    copies = Copies(sessions)
    ids = {copies.create(NEURON).id for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) >= 22 for i in ids)  # 16 random bytes, url-safe base64


def test_memory_cap_and_idle_sessions_leave_memory_not_the_store(make_db: Make) -> None:
    clock = Clock(0.0)
    sessions = LiveSessions(make_db(), 2, idle_timeout=60, clock=clock)
    copies = Copies(sessions)
    a = copies.create(NEURON)
    a.timeline.run(1)
    sessions.save(a)
    clock.now = 30
    b = copies.create(NEURON)
    c = copies.create(NEURON)  # memory holds 2: a, the least recently used, leaves it
    assert len(sessions) == 2 and a.gone and sessions.live(a.id) is None
    again = sessions.get(a.id)  # read back from its log
    assert again is not a and again.timeline.view() == a.timeline.view()
    weight: Any = again.timeline.view()["params"][0]["value"]  # nested lists: a small tensor
    assert weight[0][0] == pytest.approx(1.175)
    clock.now = 200  # everyone idle past the timeout
    assert sessions.evict_idle() == 2 and len(sessions) == 0
    assert sessions.get(b.id).timeline.moments == 0 and sessions.get(c.id).id == c.id


def test_a_busy_session_never_leaves_memory(make_db: Make) -> None:
    sessions = LiveSessions(make_db(), 1, idle_timeout=60)
    copies = Copies(sessions)
    a = copies.create(NEURON)
    with a.lock, pytest.raises(ServerFull):
        copies.create(NEURON)  # the only session in memory is in use
    assert not a.gone


def test_the_store_cap_takes_the_oldest_idle_first(make_db: Make) -> None:
    sessions = LiveSessions(make_db(max_logs=3), 1, idle_timeout=60)
    copies = Copies(sessions)
    made = [copies.create(NEURON).id for _ in range(5)]  # each new one pushes one out
    with pytest.raises(UnknownSession):
        sessions.get(made[0])
    assert sessions.get(made[-1]).id == made[-1] and sessions.db.count() <= 3


def test_delete(make_db: Make) -> None:
    """A delete takes the log out of the database; forget() only drops memory's copy."""
    sessions = LiveSessions(make_db(), 5, idle_timeout=60)
    copies = Copies(sessions)
    a, kept = copies.create(NEURON), copies.create(NEURON)
    for s in (a, kept):
        s.timeline.run(1)
        sessions.save(s)
    sessions.forget(kept.id)
    assert kept.gone and sessions.db.exists(kept.id)
    assert sessions.get(kept.id).timeline.moments == 5  # read back from its log
    sessions.delete(a.id)
    assert a.gone and not sessions.db.exists(a.id)
    with pytest.raises(NoSuchLog):
        sessions.db.load(a.id)
    with pytest.raises(UnknownSession):
        sessions.get(a.id)
    with pytest.raises(UnknownSession):
        sessions.delete("nope")


def params(timeline: Timeline) -> list[float]:
    """w and b of the neuron: a [[w]] weight and a [b] bias."""
    values: list[Any] = [p["value"] for p in timeline.view()["params"]]  # lists: small tensors
    w, b = values
    return [w[0][0], b[0]]


def line(timeline: Timeline) -> tuple[str, int]:
    """The next line; which it was and the moment after it."""
    timeline.next()
    return timeline.events[-1].entry, timeline.moment


def test_two_processes_take_a_session_in_turns(make_db: Make) -> None:
    """A acts, B replays and acts, A acts again: A's stale copy is dropped, A replays the log
    (B's moment) and its answer continues from there; no event lost or doubled."""
    a = LiveSessions(make_db(), 10, idle_timeout=60)
    b = LiveSessions(make_db(), 10, idle_timeout=60)  # another process, the same database
    first = Copies(a).create(NEURON)
    with first.lock:
        a.act(first, lambda t: t.run(1))
    assert params(first.timeline) == pytest.approx([1.175, 0.4])
    theirs = b.get(first.id)  # B is routed the session now: it replays (and claims) it
    assert theirs.owner == first.owner + 1 and theirs.timeline.moments == 5
    with theirs.lock:
        assert b.act(theirs, line) == ("forward", 6)
        assert b.act(theirs, line) == ("loss", 7)
    with first.lock:  # A still holds its copy from before B: the save finds it stale
        answer = a.act(first, line)
    assert answer == ("zero_grad", 8)  # B's forward and loss, then A's line: the third
    assert first.gone and a.live(first.id) is not first
    now = a.get(first.id)
    assert now.owner == theirs.owner + 1
    lines = [e.entry for e in b.db.load(first.id).events]
    assert lines == ["forward", "loss", "zero_grad", "backward", "step", "forward", "loss",
                     "zero_grad"]  # fmt: skip
    with theirs.lock:  # B, stale in turn, never answers from its copy, even a read
        assert b.act(theirs, lambda t: t.moment) == 8
    assert theirs.gone
    theirs = b.get(first.id)
    with now.lock:  # and A, stale again, replays B's claim (no line) before its own
        assert a.act(now, line) == ("backward", 9)
    with theirs.lock:
        assert b.act(theirs, line) == ("step", 10)
    latest, alone = b.get(first.id), Timeline(NEURON)
    alone.run(2)  # what one process alone would stand at: two iterations
    assert params(latest.timeline) == params(alone)
    again = a.get(first.id)  # A's copy (from before B's step) is stale: a read replays it
    with again.lock:
        assert a.act(again, lambda t: t.view()) == latest.timeline.view()
    assert latest.timeline.view() == alone.view()
    assert len(b.db.load(first.id).events) == 10


def test_the_forks_of_one_moment_share_one_replay_and_each_comes_to_life(make_db: Make) -> None:
    """The first fork of a moment replays it; later ones (``quick_fork``) reuse its answer, the
    same Session but the id; each fork is its own session, brought into memory by ``warm``
    standing exactly at the lecture's moment."""
    sessions = LiveSessions(make_db(), 100, 60)
    copies = Copies(sessions)
    lecture = copies.create(NEURON)
    lecture.timeline.run(3)
    lecture.timeline.next()  # mid-iteration: its forward's graph is part of the moment
    sessions.save(lecture)
    assert copies.quick_fork(lecture.id) is None  # the first of a moment copies and replays
    first = copies.fork(lecture.id)
    later = copies.quick_fork(lecture.id)
    assert later is not None and later.moment == first.moment and later.id != first.id
    assert later.session is first.session  # one answer for the moment
    assert first.session == lecture.timeline.view()  # (no quiz hook here)
    for fork in (first, later):
        assert sessions.live(fork.id) is None  # replayed after the answer, not before it
        copies.warm(fork.id)
        alive = sessions.live(fork.id)
        assert alive is not None and alive.timeline.view() == lecture.timeline.view()
    one, other = sessions.live(first.id), sessions.live(later.id)
    assert one is not None and other is not None
    one.timeline.next()  # the loss line: its graph came back with the replay
    sessions.save(one)
    assert other.timeline.view() == lecture.timeline.view() != one.timeline.view()
    copies.warm("no-such-session")  # gone meanwhile: no error
    sessions.close()  # the keyframes still pending are written before the database closes


def test_a_long_run_is_written_as_it_goes(make_db: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of 130 iterations (650 lines) is written every SAVE_EVERY lines, not as one
    write of 650 events (SQLite's one writer, which every click waits for, is held briefly);
    its keyframes go to the writer once, at its end; the log reads back to the same Session."""
    db = make_db()
    sessions = LiveSessions(db, 10, 60)
    copies = Copies(sessions)
    a = copies.create(NEURON)
    writes: list[int] = []
    submitted: list[int] = []
    real_append, real_submit = db.append, sessions.keyframes.submit

    def append(log_id: str, change: Change, owner: int | None = None) -> None:
        writes.append(len(change.events))
        real_append(log_id, change, owner)

    def submit(session: LiveSession) -> None:
        submitted.append(len(writes))
        real_submit(session)

    monkeypatch.setattr(db, "append", append)
    monkeypatch.setattr(sessions.keyframes, "submit", submit)
    with a.lock:
        sessions.act(a, lambda timeline: timeline.run(130))
    assert writes == [SAVE_EVERY, SAVE_EVERY, 650 - 2 * SAVE_EVERY]
    assert submitted == [3]  # after the last write
    sessions.keyframes.close()  # written, before the database goes with the test
    sessions.forget(a.id)
    again = sessions.get(a.id)
    assert again is not a and again.timeline.view() == a.timeline.view()
    assert again.timeline.moments == 650


def test_a_setup_created_before_starts_a_session_as_its_log_alone(make_db: Make) -> None:
    """``start``: nothing for a setup never created; then the log alone, read back on first
    use to exactly a created session's Session, lines included."""
    sessions = LiveSessions(make_db(), 10, 60)
    copies = Copies(sessions)
    moons = Setup("moons", 0.3, 0, PLAIN_SGD)
    assert copies.start(moons) is None
    first = copies.create(moons)
    started = copies.start(moons)
    assert started is not None and started != first.id
    assert sessions.live(started) is None  # no Lab built yet
    copies.warm(started)
    session = sessions.live(started)
    assert session is not None and session.timeline.view() == first.timeline.view()
    for s in (first, session):
        with s.lock:
            sessions.act(s, lambda timeline: timeline.run(2))
    assert session.timeline.view() == first.timeline.view()
    assert copies.start(Setup("moons", 0.3, 1, PLAIN_SGD)) is None  # another seed


def test_a_started_session_is_in_use(make_db: Make) -> None:
    """A session started as its log alone counts as in use before its Lab is built: a full
    database does not sweep it to make room for another (found by CI: it did, once its
    warm-up came after the next creation)."""
    sessions = LiveSessions(make_db(max_logs=2), 10, 60)
    copies = Copies(sessions)
    copies.create(NEURON)
    started = copies.start(NEURON)
    assert started is not None and sessions.live(started) is None
    with pytest.raises(ServerFull):
        copies.create(NEURON)
    assert sessions.get(started).timeline.moments == 0


def test_a_delete_during_a_replay_leaves_no_session_behind(
    make_db: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm-up reading a session back while it is deleted: the delete waits for it, and the
    session is gone from memory and the database (found by CI: the replay put it back in
    memory after the delete, and a second DELETE answered 204)."""
    db = make_db()
    sessions = LiveSessions(db, 10, 60)
    copies = Copies(sessions)
    copies.create(NEURON)
    started = copies.start(NEURON)
    assert started is not None
    claiming, go_on = threading.Event(), threading.Event()
    real_claim = db.claim

    def claim(log_id: str) -> Any:
        claiming.set()
        go_on.wait(10)
        return real_claim(log_id)

    monkeypatch.setattr(db, "claim", claim)
    warm = threading.Thread(target=copies.warm, args=(started,))
    warm.start()
    assert claiming.wait(10)
    delete = threading.Thread(target=sessions.delete, args=(started,))
    delete.start()
    delete.join(0.2)
    assert delete.is_alive()  # it waits for the replay under way
    go_on.set()
    warm.join(10)
    delete.join(10)
    assert sessions.live(started) is None
    with pytest.raises(UnknownSession):
        sessions.get(started)
    with pytest.raises(UnknownSession):
        sessions.delete(started)
