"""A lecture's events as changes: each ``session`` event with the stores that equal the event
before it left out and named in ``unchanged`` (``app/engine/changes.py``), for the followers who
ask for it (``?changes=1``, as the followers' page does): a class following the digits MLP gets
a forward's 2 KB where the whole Session is 60 KB. A follower gets the whole Session first, and
again whenever it falls behind (``hub.follow``): a change is sent only after the event it is a
change of.

Made from the events' bytes, so it serves the events of other processes (``relay.py``) alike;
once per event, on the event loop, for all the followers.
"""

from __future__ import annotations

from collections import deque
from typing import Any, cast

import pydantic_core

from app.engine.changes import changed
from app.engine.views import SessionView

DATA = b"\ndata: "


def parsed(body: bytes) -> tuple[bytes, dict[str, Any]] | None:
    """A ``session`` event's head (its id and event lines) and payload; None for another."""
    head, found, data = body.partition(DATA)
    if not found or not head.endswith(b"event: session"):
        return None
    payload: dict[str, Any] = pydantic_core.from_json(data)
    return head, payload


class Changes:
    """The changed form of a lecture's newest events, each made once (on the event loop)."""

    def __init__(self) -> None:
        self._made: dict[int, bytes] = {}
        self._last: tuple[int, dict[str, Any]] | None = None  # the newest event read

    def of(self, recent: deque[tuple[int, bytes]], seq: int, body: bytes) -> bytes:
        """Event ``seq`` (``body``, one of ``recent``) as a change of event ``seq - 1``; as it is
        when that event is no longer kept or either is not a ``session`` event."""
        made = self._made.get(seq)
        if made is None:
            made = self._made[seq] = self._make(recent, seq, body)
            oldest = recent[0][0] if recent else seq
            for old in [s for s in self._made if s < oldest]:
                del self._made[old]
        return made

    def saw(self, seq: int, body: bytes) -> None:
        """A whole Session numbered like event ``seq`` (a follower's first): the stores of that
        event, so the next event is a change of it even when ``seq`` itself is not kept."""
        if seq not in self._made and (self._last is None or self._last[0] < seq):
            read = parsed(body)
            if read is not None:
                self._last = (seq, read[1])

    def _make(self, recent: deque[tuple[int, bytes]], seq: int, body: bytes) -> bytes:
        now = parsed(body)
        before = self._read(recent, seq - 1)
        if now is not None:
            self._last = (seq, now[1])
        if now is None or before is None or "session" not in before:
            return body
        head, payload = now
        now_view, before_view = cast(SessionView, payload["session"]), before["session"]
        change = {**payload, "session": changed(now_view, cast(SessionView, before_view))}
        return head + DATA + pydantic_core.to_json(change) + b"\n\n"

    def _read(self, recent: deque[tuple[int, bytes]], seq: int) -> dict[str, Any] | None:
        if self._last is not None and self._last[0] == seq:
            return self._last[1]
        for kept, body in reversed(recent):
            if kept == seq:
                read = parsed(body)
                return None if read is None else read[1]
            if kept < seq:
                break
        return None
