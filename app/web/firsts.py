"""A class's start (issue 38): what every session of a setup holds alike until it does
something of its own, its creation's answer and its first line.

A class's first clicks run once: 300 students who created one setup click their first line
within a moment of one another, on sessions that are still their log alone. That
line from a setup's start makes the same event and the same Session in every one of them (each
Lab a copy of one seeded template, PyTorch deterministic on the CPU), so the first session to
run it for real leaves its event and its answer here, and each later one writes that event as
its own log's first (one row) and answers the same bytes with its own id, building nothing
then: its Lab is built after the answer (the warm-up, or its next request replays the line).

Only for what the page sends right after a creation (``?held=start``, ``since`` 0, ``moment``
absent or 1), on SQLite, on a session this process started and nothing was done to. The answer
is the change from the start, under a version that names the line's event by its digest (its
``.0`` version): the session, once built, holds that answer for the next request as it holds
its creation's (``hold``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import pydantic_core
from starlette.responses import Response

from app.engine.changes import START, marks
from app.engine.views import SessionView
from app.log.records import Event
from app.log.timeline import Timeline
from app.sessions.live import LiveSessions
from app.web.flights import Flights

KEPT = 64  # (setup, line) pairs kept
Key = tuple[str, str]  # a setup's key, the line asked


def hold(timeline: Timeline, held: str) -> None:
    """Before an action: the Sessions a client may hold that only the log names. ``start``,
    its creation's answer: the stores as they stand while nothing has been done to the session
    (a start is its setup's alone). A ``.0`` version, a shared first line's answer: the stores
    as they stand while the log is that one event, at its head."""
    events = timeline.events
    one = len(events) == 1 and timeline.head == 0 == timeline.first
    if (held == START and not events) or (
        held.endswith(".0") and one and version_of(events[0]) == held  # the digest last
    ):
        timeline.answers.hold(held, lambda: marks(timeline.lab, timeline.view()))


def version_of(event: Event) -> str:
    """The version of the answer to a log's first event: 64 bits of its digest, then ``.0``."""
    text = json.dumps(event.to_json(), separators=(",", ":"), sort_keys=True).encode()
    return f"{hashlib.blake2b(text, digest_size=8).hexdigest()}.0"


@dataclass(frozen=True)
class First:
    event: Event
    body: bytes  # the answer as JSON, without its id


class Firsts:
    """The first lines run from each setup's start, by (the setup's key, the line asked)."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._firsts: OrderedDict[tuple[str, str], First] = OrderedDict()
        self._known: frozenset[str] = frozenset()  # their setups (read from other threads)
        self._lock = threading.Lock()
        self._flights = Flights()

    def offer(self, timeline: Timeline, asked: str, answer: SessionView) -> None:
        """Keep the line ``asked`` a session just ran first from its start, held (its answer
        the change from there), unless it made no moment or carries a question (a quiz, a
        class's poll: not the others')."""
        if len(timeline.events) != 1 or not timeline.events[0].moment:
            return
        if answer.get("quiz") is not None or "prediction" in answer:
            return
        event = timeline.events[0]
        setup_key = timeline.setup.key()
        if (setup_key, asked) in self._firsts:
            return  # kept already: the same event and answer
        shared = {k: v for k, v in answer.items() if k != "id"} | {"version": version_of(event)}
        body = pydantic_core.to_json(shared, inf_nan_mode="strings")
        with self._lock:  # offered under a session's lock: on the loop or in a worker thread
            self._firsts[setup_key, asked] = First(event, body)
            while len(self._firsts) > self.kept:
                self._firsts.popitem(last=False)
            self._known = frozenset(key for key, _ in self._firsts)

    def knows(self, setup_key: str) -> bool:
        """Whether a first line of ``setup_key``'s is kept (asked from worker threads too)."""
        return setup_key in self._known

    @staticmethod
    def first_of(sessions: LiveSessions, session_id: str, asked: str) -> Key | None:
        """The (setup, line) a session's first line would be, if nothing was done to it yet:
        started and untouched, or in memory with an empty log (the class's first to click)."""
        setup_key = sessions.untouched(session_id)
        if setup_key is None:
            live = sessions.live(session_id)
            if live is None or live.timeline.events:
                return None
            setup_key = live.timeline.setup.key()
        return setup_key, asked

    async def answer(self, sessions: LiveSessions, session_id: str, key: Key) -> Response | None:
        """The shared answer of a started session's first line ``key``, its event written,
        once any first run of that line under way is done; None when this one must go the
        usual way (and be that first run, in ``flight``)."""
        await self._flights.after(_flight(key))
        first = self._firsts.get(key)
        if first is None or not sessions.first_line(session_id, key[0], first.event):
            return None
        head = b'{"id":' + json.dumps(session_id).encode() + b","
        return Response(head + first.body[1:], media_type="application/json")

    def flight(self, key: Key) -> AbstractAsyncContextManager[None]:
        """The first run of line ``key``: the class's other first clicks of it wait for it."""
        return self._flights.flight(_flight(key))


def _flight(key: Key) -> str:
    return f"{key[1]}\n{key[0]}"


FIRSTS = Firsts()
