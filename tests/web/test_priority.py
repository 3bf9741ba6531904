"""Light work first: a run's lines wait while a light request is being answered, at most
``longest`` at a time (heavy work slows down, it never stops)."""

from __future__ import annotations

import threading
import time

from app.db import SqliteDatabase
from app.engine.optimizers import PLAIN_SGD
from app.log.records import Setup
from app.log.timeline import Timeline
from app.sessions.journal import Journal
from app.web.priority import Priority


def timeline() -> Timeline:
    store = SqliteDatabase(":memory:")
    setup = Setup("neuron", 0.05, 0, PLAIN_SGD, 1, {})
    store.create("s", setup)
    return Timeline(setup, Journal(store, "s"))


def running(t: Timeline, iterations: int, priority: Priority) -> threading.Thread:
    thread = threading.Thread(target=t.run, args=(iterations, priority.pause), daemon=True)
    thread.start()
    return thread


def test_a_run_waits_between_lines_while_light_work_is_answered() -> None:
    priority = Priority(longest=60)
    t = timeline()
    priority.begin()
    priority.begin()
    priority.end()  # one light request still being answered
    thread = running(t, 3, priority)
    time.sleep(0.3)
    assert t.moments == 0 and thread.is_alive()  # not one line ran
    priority.end()  # its answer has started
    thread.join(30)
    assert not thread.is_alive() and t.moments == 15


def test_a_run_goes_on_without_light_work() -> None:
    priority = Priority(longest=60)
    t = timeline()
    thread = running(t, 3, priority)
    thread.join(30)
    assert not thread.is_alive() and t.moments == 15 and priority.light == 0


def test_heavy_work_never_waits_longer_than_longest_at_a_time() -> None:
    priority = Priority(longest=0.005)
    t = timeline()
    priority.begin()  # and never ends
    thread = running(t, 2, priority)
    thread.join(30)
    assert not thread.is_alive() and t.moments == 10
