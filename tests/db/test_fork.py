"""A fork in the store, on SQLite and on PostgreSQL: the log up to the source's head, owned by
the forker, a thinned set of keyframes that still replays every moment exactly, and, taken
while the source's owner appends (no lock of the session held), always whole actions."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from app.db import Database
from app.db.copies import BASE_GRACE, FORK_EVERY, FORK_NEWEST
from app.db.sqlite import FairLock
from app.engine.optimizers import PLAIN_SGD
from app.engine.views import SessionView
from app.log.records import Setup
from app.log.timeline import Timeline
from app.sessions.journal import Journal
from support.clock import Clock

Make = Callable[..., Database]
NEURON = Setup("neuron", 0.05, 0, PLAIN_SGD, program=("forward", "loss", "zero_grad",
                                                      "backward", "step"))  # fmt: skip


def test_a_fork_replays_every_moment_of_its_past_exactly(make_db: Make) -> None:
    store = make_db()
    source = lecture(store, 40)
    source.rewind(150)  # the lecture stepped back: the fork starts there
    store.append("a", source.drain())
    stored = store.load("a")

    saved, owner, _ = store.fork("a", "f")
    store.check_owner("f", owner)  # the forker owns it: no claim needed
    assert owner == 1 and saved.head == source.head and len(saved.events) == source.head + 1
    below = [seq for seq, _ in stored.keyframes if seq < source.head][::-1]
    kept = {s for n, s in enumerate(below, 1) if n <= FORK_NEWEST or n % FORK_EVERY == 0}
    assert [seq for seq, _ in saved.keyframes] == sorted(kept)
    assert len(kept) < len(below) / 3

    fork = Timeline.restored(saved, Journal(store, "f"))
    upto = source.view() | {"moments": 150}  # the moments after the head are not copied
    assert fork.view() == upto
    for n in [*range(0, 151, 7), 150]:  # every part of its past, from whichever checkpoint
        fork.rewind(n)
        source.rewind(n)
        assert fork.view() == source.view() | {"moments": 150}, n
    fork.next()  # the fork goes its own way; the source's log is untouched
    store.append("f", fork.drain(), owner)
    assert store.load("a").events == stored.events


def test_a_fork_of_a_log_that_forgot_its_start(make_db: Make) -> None:
    store = make_db()
    store.create("a", NEURON)
    source = Timeline(NEURON, Journal(store, "a"), keep=20, every=3)
    source.run(30)
    store.append("a", source.drain())
    assert source.first > 0
    saved, _, _ = store.fork("a", "f")
    assert saved.first == source.first and (source.first - 1) in dict(saved.keyframes)
    fork = Timeline.restored(saved, Journal(store, "f"))
    assert fork.view() == source.view()
    fork.rewind(fork.first_moment)
    source.rewind(source.first_moment)
    assert fork.view() == source.view()


def test_forks_taken_while_the_owner_appends_hold_whole_actions(make_db: Make) -> None:
    """The owner goes on (lines, and lines from a past moment that cut the log) while forks
    are taken without its lock: each fork is one version of the log as some action left it,
    its keyframes from that same version (its replay is that version's numbers)."""
    store = make_db()
    store.create("a", NEURON)
    source = Timeline(NEURON, Journal(store, "a"), every=3)
    versions: dict[str, SessionView] = {}

    def key(events: list[Any]) -> str:
        return json.dumps([e.to_json() for e in events])

    def write() -> None:
        for i in range(120):
            if i % 9 == 8:
                source.rewind(max(0, source.moment - 4))
            source.next()
            versions[key(source.events[: source.head + 1])] = source.view()
            store.append("a", source.drain())  # recorded before it is committed

    writer = threading.Thread(target=write)
    writer.start()
    forks = 0
    while writer.is_alive() or forks < 5:
        saved, _, _ = store.fork("a", f"f{forks}")
        forks += 1
        if not saved.events:
            continue
        assert key(saved.events) in versions
        fork = Timeline.restored(saved, Journal(store, f"f{forks - 1}"))
        assert fork.view() == versions[key(saved.events)]
    writer.join()
    assert forks >= 5


def test_sqlites_lock_goes_in_turn_and_to_the_event_loop_first() -> None:
    lock = FairLock()
    order: list[str] = []

    def take(name: str) -> None:
        with lock:
            order.append(name)

    def on_a_loop() -> None:
        async def line() -> None:
            take("loop")

        asyncio.run(line())

    lock.__enter__()
    waiting = []
    starts: list[tuple[Callable[..., None], tuple[str, ...]]] = [
        (take, ("a",)),
        (take, ("b",)),
        (take, ("c",)),
        (on_a_loop, ()),
    ]
    for target, args in starts:
        thread = threading.Thread(target=target, args=args)
        thread.start()
        waiting.append(thread)
        queued = len(waiting)
        while len(lock._queue) + len(lock._urgent) < queued:  # in this order
            time.sleep(0.001)
    lock.__exit__()
    for thread in waiting:
        thread.join(10)
    assert order == ["loop", "a", "b", "c"]


def lecture(store: Database, iterations: int) -> Timeline:
    """The source "a": neuron, ``iterations`` iterations clicked line by line, a keyframe every
    3 events, stored."""
    store.create("a", NEURON)
    source = Timeline(NEURON, Journal(store, "a"), every=3)
    for _ in range(iterations * 5):
        source.next()
    store.append("a", source.drain())
    return source


def own_rows(store: Database, log_id: str) -> int:
    """Events and keyframes the log holds itself (not read from a base)."""
    return store.size(log_id)


def test_the_forks_of_one_moment_share_one_copy_of_its_past(make_db: Make) -> None:
    """The first fork of a moment copies the log once (a base); every later fork of that moment
    writes one row and reads its past from there. Whatever the source or a fork does next (a
    rewind that cuts, new lines) changes no other fork's past."""
    store = make_db()
    source = lecture(store, 20)
    at_fork = source.view()
    assert store.quick_fork("a", "q") is None and not store.exists("q")  # it takes a copy
    one, two = store.fork("a", "f1"), store.fork("a", "f2")
    assert one.base == two.base and own_rows(store, "f1") == own_rows(store, "f2") == 0
    assert store.load("f1").events == store.load("a").events
    first = Timeline.restored(store.load("f1"), Journal(store, "f1"))
    assert first.view() == at_fork

    source.rewind(50)  # the lecture cuts back into the moment forked and goes another way
    source.next()
    source.next()
    store.append("a", source.drain())
    assert Timeline.restored(store.load("f2"), Journal(store, "f2")).view() == at_fork
    three = store.fork("a", "f3")  # another past at another moment: another base
    assert three.base != one.base
    assert store.quick_fork("a", "q3").base == three.base  # type: ignore[union-attr]
    assert Timeline.restored(store.load("f3"), Journal(store, "f3")).view() == (source.view())

    # a fork acting from a moment of its past reads less of the base; its sibling reads all
    first.rewind(30)
    first.next()
    store.append("f1", first.drain(), one.owner)
    again = Timeline.restored(store.load("f1"), Journal(store, "f1"))
    assert again.view() == first.view() and again.moments == 31
    for n in (0, 11, 30, 31):  # every part of it, from its own keyframes and the base's
        again.rewind(n)
        first.rewind(n)
        assert again.view() == first.view(), n
    assert Timeline.restored(store.load("f2"), Journal(store, "f2")).view() == at_fork


def test_the_same_head_with_another_past_takes_another_base(make_db: Make) -> None:
    """Back to moment 20 and on again to the head it had: the same head, but a cut was written
    (the database cannot tell the past came out the same), so the forks after it read from
    another base, and stand where the source stands."""
    store = make_db()
    source = lecture(store, 10)
    before = store.fork("a", "f1")
    head = source.head
    source.rewind(20)
    store.append("a", source.drain())
    while source.head < head:
        source.next()
        store.append("a", source.drain())
    assert source.head == head
    after = store.fork("a", "f2")
    assert after.base != before.base
    fork = Timeline.restored(store.load("f2"), Journal(store, "f2"))
    assert fork.view() == source.view()


def test_a_base_lives_while_a_log_reads_from_it(make_db: Make) -> None:
    """A snapshot of a fork holds its whole past (it outlives the fork and its base); a base is
    kept while any fork reads from it and swept once none has for a while."""
    clock = Clock()
    store = make_db("s", clock=clock)
    lecture(store, 10)
    base = store.fork("a", "f1").base
    store.fork("a", "f2")
    store.snapshot("f1", "token")
    want = Timeline.restored(store.load("f1"), Journal(store, "f1")).view()
    for gone in ("a", "f1"):
        store.delete(gone)
    clock.now += 2 * BASE_GRACE
    store.sweep()
    assert store.load(base, "snapshot").events  # f2 still reads from it
    store.delete("f2")
    store.sweep()
    assert store.count() == 1  # the base went; the snapshot stays
    store.open_snapshot("token", "opened")
    assert Timeline.restored(store.load("opened"), Journal(store, "opened")).view() == want


def test_a_fork_that_forgot_all_it_read_lets_its_base_go(make_db: Make) -> None:
    clock = Clock()
    store = make_db("s", clock=clock)
    lecture(store, 4)
    forked = store.fork("a", "f")
    fork = Timeline.restored(forked.saved, Journal(store, "f"))
    fork.keep = 20
    fork.run(20)  # 100 more lines: it forgets all but its newest, none of them the base's
    store.append("f", fork.drain(), forked.owner)
    assert fork.first > 20
    store.delete("a")
    clock.now += 2 * BASE_GRACE
    store.sweep()
    assert store.count() == 1
    assert Timeline.restored(store.load("f"), Journal(store, "f")).view() == fork.view()
