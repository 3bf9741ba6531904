"""Server-Sent Events on the wire, for the lectures' fan-out: an event's bytes (made once, shared
by every follower), the keep-alive and end frames, the events a follower has not had yet, and
waking the waiting followers a slice at a time so the event loop stays responsive."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import pydantic_core

# followers woken per turn of the event loop: a request arriving during a fan-out (the
# instructor's next line) waits for a slice or two of followers, not for all of them
SLICE = 10
KEEPALIVE = b": keep-alive\n\n"
END = b"event: end\ndata: {}\n\n"


def frame(seq: int, payload: dict[str, Any], event: str = "session") -> bytes:
    data = pydantic_core.to_json(payload, inf_nan_mode="strings").decode()
    return f"id: {seq}\nevent: {event}\ndata: {data}\n\n".encode()


def newer(recent: deque[tuple[int, bytes]], last: int) -> list[tuple[int, bytes]]:
    """The events after ``last``, oldest first: read from the new end (usually one or none)."""
    fresh: list[tuple[int, bytes]] = []
    for seq, body in reversed(recent):
        if seq <= last:
            break
        fresh.append((seq, body))
    fresh.reverse()
    return fresh


def release(loop: asyncio.AbstractEventLoop, waiters: list[asyncio.Future[None]]) -> None:
    """Wake ``waiters`` (on ``loop``), SLICE of them a turn."""
    for waiter in waiters[:SLICE]:
        if not waiter.done():  # a follower that left is cancelled
            waiter.set_result(None)
    if len(waiters) > SLICE:
        loop.call_soon(release, loop, waiters[SLICE:])


def on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this code runs on ``loop`` (else: a worker thread)."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
