"""Keyframes written after the answer (``journal.py``): a rewind reads one still pending from
memory; a cut or a reset forgets the pending ones it makes stale, so the store ends up holding
exactly the live timeline's keyframes; a replay from the store gives the same numbers."""

from __future__ import annotations

from collections.abc import Callable

from app.db import Database
from app.engine.optimizers import PLAIN_SGD
from app.engine.views import SessionView
from app.log.records import Setup
from app.log.replays import KEYFRAMES_IN_MEMORY
from app.log.timeline import Timeline
from app.sessions.copies import Copies
from app.sessions.journal import Journal
from app.sessions.live import LiveSessions

Make = Callable[..., Database]

MOONS = Setup("moons", 0.3, 0, PLAIN_SGD, program=("forward", "loss", "zero_grad",
                                                   "backward", "step"))  # fmt: skip


def stored_keyframes(store: Database, session_id: str) -> list[int]:
    return [seq for seq, _ in store.load(session_id).keyframes]


def clicks(timeline: Timeline, lines: int) -> None:
    """Lines clicked one by one (a run takes its keyframes further apart)."""
    for _ in range(lines):
        timeline.next()


def test_pending_keyframes_serve_rewinds_and_reach_the_store_as_the_timeline_holds_them(
    make_db: Make,
) -> None:
    store = make_db()
    sessions = LiveSessions(store, 10, 600)
    a = Copies(sessions).create(MOONS)
    with a.lock:  # the writer waits for the session's lock: nothing can be written meanwhile
        sessions.act(a, lambda t: clicks(t, 100))  # a keyframe every 10 events
        assert stored_keyframes(store, a.id) == []
        assert isinstance(a.journal, Journal)
        live = sorted(s for s, k in a.timeline.keyframes.items() if k.state is not None and s >= 0)
        dropped = sorted(s for s, k in a.timeline.keyframes.items() if k.state is None)
        assert len(live) == KEYFRAMES_IN_MEMORY and len(dropped) == 5
        assert set(dropped) <= set(a.journal.pending)  # read back from memory, not the store

        def rewind_13(t: Timeline) -> SessionView:
            t.rewind(13)
            return t.view()

        at_13 = sessions.act(a, rewind_13)
        # a line from moment 13 cuts every later moment, and with them the pending keyframes
        sessions.act(a, lambda t: t.next())
        assert max(a.journal.pending) < 13 + 1
        sessions.act(a, lambda t: clicks(t, 30))
    sessions.keyframes.close()  # writes what is pending
    assert a.journal.pending == {}
    assert stored_keyframes(store, a.id) == sorted(s for s in a.timeline.keyframes if s >= 0)
    again = Timeline.restored(store.load(a.id), Journal(store, a.id))
    assert again.view() == a.timeline.view()
    again.rewind(13)
    assert {**again.view(), "moments": 100} == at_13  # 100 moments then, 40 now
    for n in (1, 12, 25, 39):
        a.timeline.rewind(n)
        again.rewind(n)
        assert again.view() == a.timeline.view()


def test_a_reset_forgets_the_pending_keyframes(make_db: Make) -> None:
    store = make_db()
    sessions = LiveSessions(store, 10, 600)
    a = Copies(sessions).create(MOONS)
    with a.lock:
        sessions.act(a, lambda t: clicks(t, 40))
        assert a.journal is not None and a.journal.pending
        sessions.act(a, lambda t: t.reset())
        assert a.journal.pending == {}
        sessions.act(a, lambda t: clicks(t, 15))
    sessions.keyframes.close()
    assert stored_keyframes(store, a.id) == sorted(s for s in a.timeline.keyframes if s >= 0)
