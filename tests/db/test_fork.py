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
from app.db.logs import FORK_EVERY, FORK_NEWEST
from app.db.sqlite import FairLock
from app.engine.optimizers import PLAIN_SGD
from app.journal import Journal
from app.records import Setup
from app.timeline import Timeline

Make = Callable[..., Database]
NEURON = Setup("neuron", 0.05, 0, PLAIN_SGD, program=("forward", "loss", "zero_grad",
                                                      "backward", "step"))  # fmt: skip


def test_a_fork_replays_every_moment_of_its_past_exactly(make_db: Make) -> None:
    store = make_db()
    store.create("a", NEURON)
    source = Timeline(NEURON, Journal(store, "a"), every=3)
    source.run(40)
    store.append("a", source.drain())
    source.rewind(150)  # the lecture stepped back: the fork starts there
    store.append("a", source.drain())
    stored = store.load("a")

    saved, owner = store.fork("a", "f")
    store.check_owner("f", owner)  # the forker owns it: no claim needed
    assert owner == 1 and saved.head == source.head and len(saved.events) == source.head + 1
    below = [seq for seq, _ in stored.keyframes if seq < source.head][::-1]
    kept = {s for n, s in enumerate(below, 1) if n <= FORK_NEWEST or n % FORK_EVERY == 0}
    assert [seq for seq, _ in saved.keyframes] == sorted(kept)
    assert len(kept) < len(below) / 3

    fork = Timeline.restored(saved, Journal(store, "f"))
    upto = source.snapshot() | {"moments": 150}  # the moments after the head are not copied
    assert fork.snapshot() == upto
    for n in [*range(0, 151, 7), 150]:  # every part of its past, from whichever checkpoint
        fork.rewind(n)
        source.rewind(n)
        assert fork.snapshot() == source.snapshot() | {"moments": 150}, n
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
    saved, _ = store.fork("a", "f")
    assert saved.first == source.first and (source.first - 1) in dict(saved.keyframes)
    fork = Timeline.restored(saved, Journal(store, "f"))
    assert fork.snapshot() == source.snapshot()
    fork.rewind(fork.first_moment)
    source.rewind(source.first_moment)
    assert fork.snapshot() == source.snapshot()


def test_forks_taken_while_the_owner_appends_hold_whole_actions(make_db: Make) -> None:
    """The owner goes on (lines, and lines from a past moment that cut the log) while forks
    are taken without its lock: each fork is one version of the log as some action left it,
    its keyframes from that same version (its replay is that version's numbers)."""
    store = make_db()
    store.create("a", NEURON)
    source = Timeline(NEURON, Journal(store, "a"), every=3)
    versions: dict[str, dict[str, Any]] = {}

    def key(events: list[Any]) -> str:
        return json.dumps([e.to_json() for e in events])

    def write() -> None:
        for i in range(120):
            if i % 9 == 8:
                source.rewind(max(0, source.moment - 4))
            source.next()
            versions[key(source.events[: source.head + 1])] = source.snapshot()
            store.append("a", source.drain())  # recorded before it is committed

    writer = threading.Thread(target=write)
    writer.start()
    forks = 0
    while writer.is_alive() or forks < 5:
        saved, _ = store.fork("a", f"f{forks}")
        forks += 1
        if not saved.events:
            continue
        assert key(saved.events) in versions
        fork = Timeline.restored(saved, Journal(store, f"f{forks - 1}"))
        assert fork.snapshot() == versions[key(saved.events)]
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
