"""Light work first: a run's lines wait while a light request is being answered, at most
``longest`` at a time (heavy work slows down, it never stops)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from app.db import SqliteDatabase
from app.engine.optimizers import PLAIN_SGD
from app.log.records import Setup
from app.log.timeline import Timeline
from app.sessions.journal import Journal
from app.web.priority import Priority

MARGIN = 0.25  # seconds a woken thread may wait for the interpreter on a busy machine


def timeline() -> Timeline:
    store = SqliteDatabase(":memory:")
    setup = Setup("neuron", 0.05, 0, PLAIN_SGD, 1, {})
    store.create("s", setup)
    return Timeline(setup, Journal(store, "s"))


def running(t: Timeline, iterations: int, pause: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=t.run, args=(iterations, pause), daemon=True)
    thread.start()
    return thread


def test_a_run_waits_between_lines_while_light_work_is_answered() -> None:
    priority = Priority(longest=60)
    t = timeline()
    priority.begin()
    priority.begin()
    priority.end()  # one light request still being answered
    reached, left = threading.Event(), threading.Event()

    def pause() -> None:
        reached.set()
        priority.pause()
        left.set()

    thread = running(t, 3, pause)
    assert reached.wait(30)  # the run is at its first pause, not merely not yet scheduled
    assert not left.wait(0.3)  # and stays in it: not one line ran
    assert t.moments == 0 and thread.is_alive()
    priority.end()  # its answer has started
    thread.join(30)
    assert not thread.is_alive() and t.moments == 15


def test_a_run_goes_on_without_light_work() -> None:
    priority = Priority(longest=60)
    t = timeline()
    thread = running(t, 3, priority.pause)
    thread.join(30)
    assert not thread.is_alive() and t.moments == 15 and priority.light == 0


def test_heavy_work_never_waits_longer_than_longest_at_a_time() -> None:
    longest = 0.05
    priority = Priority(longest=longest)
    t = timeline()
    priority.begin()  # and never ends
    waits: list[float] = []

    def pause() -> None:
        start = time.perf_counter()
        priority.pause()
        waits.append(time.perf_counter() - start)

    thread = running(t, 2, pause)
    thread.join(30)
    assert not thread.is_alive() and t.moments == 10 and len(waits) == 10
    # each pause let the light work go first (it waited), then gave up on it: the margin
    # is a shared machine's late wake-up; a pause waiting for the answer never ends here
    assert all(longest * 0.5 <= wait <= longest + MARGIN for wait in waits), waits
