"""The heavy-work pool: a budget for the work that can take a worker thread for long.

Runs of many iterations, forks and sessions replayed from the database each take one of
``workers`` slots (``heavy_workers``, by default one per core) for as long as they run in their
thread. When every slot is taken they wait in one first-come-first-served queue of at most
``queue`` requests (``heavy_queue``: deep enough for a whole class forking one lecture); past
that the server is truly overloaded and answers 503 with ``Retry-After`` (``PoolFull``).

A line on a session in memory never comes here: it runs on the event loop or in the ordinary
thread pool, so a student's click never waits behind twenty students' runs of 1000 iterations.

Heavy work also yields the interpreter to light work (app/web/priority.py): ``LightFirst`` counts
every request as light until its answer starts, unless it takes a slot here first.

A session's own build jumps the queue: a new session's Lab is built after its answer through
this queue (``warming``), in arrival order, so right after a class creates at once the first
click of a student would wait for everyone's build before its own. Work queued under a ``key``
(the session's id) can be moved to the front (``hurry``), and a request on that session waits
for that build alone (``SessionTarget.take``).

Everything here runs on the event loop's thread (no lock needed); the work itself runs in a
worker thread. The engine and the sessions know nothing of it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TypeVar, TypeVarTuple

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.priority import Priority

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
MAX_RETRY_AFTER = 60  # seconds: a guess beyond this helps no one


class PoolFull(Exception):
    """Every heavy-work slot is taken and the queue is full (a 503 with ``Retry-After``)."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            "the server is overloaded with heavy work (runs, forks, sessions read back from "
            f"the database); try again in {retry_after} s"
        )
        self.retry_after = retry_after


class Flight:
    """One request: light work until its answer starts or it takes a heavy-work slot."""

    __slots__ = ("_priority", "light")

    def __init__(self, priority: Priority) -> None:
        self._priority, self.light = priority, True
        priority.begin()

    def done(self) -> None:
        if self.light:
            self.light = False
            self._priority.end()


FLIGHT: ContextVar[Flight | None] = ContextVar("flight", default=None)


def no_longer_light() -> None:
    """This request waits for heavy work (a slot, another request's hold of its session):
    heavy work need not pause for it."""
    flight = FLIGHT.get()
    if flight is not None:
        flight.done()


class LightFirst:
    """Counts the requests being answered for ``Priority`` (an SSE stream stops counting when
    its stream starts). Outside gzip: a compressed answer starts once it is compressed."""

    def __init__(self, app: ASGIApp, priority: Priority) -> None:
        self.app, self.priority = app, priority

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        flight = Flight(self.priority)
        token = FLIGHT.set(flight)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                flight.done()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            flight.done()
            FLIGHT.reset(token)


class Withdrawn(Exception):
    """Keyed work taken out of the queue before it ran (``HeavyPool.withdraw``)."""


class Keyed:
    """Work queued under a key: its turn in the queue while it waits, and its end."""

    __slots__ = ("ended", "turn", "withdrawn")

    def __init__(self) -> None:
        self.turn: asyncio.Future[None] | None = None  # set while it waits in the queue
        self.ended = asyncio.Event()  # set when it ran, failed or left the queue
        self.withdrawn = False


class HeavyPool:
    """``workers`` slots and a FIFO queue of at most ``queue`` waiting requests."""

    def __init__(self, workers: int, queue: int, priority: Priority | None = None) -> None:
        if workers < 1 or queue < 0:
            raise ValueError("a heavy-work pool needs at least 1 worker and a queue of 0 or more")
        self.workers, self.queue = workers, queue
        self.priority = priority or Priority()  # its work's lines pause for light work
        self.running = 0  # slots taken
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._mean = 0.05  # seconds a slot is held, on average lately (for Retry-After)
        self._keyed: dict[str, Keyed] = {}  # work queued or running under a key (see hurry)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def queued(self) -> list[str]:
        """The keys of the keyed work waiting, in the order it will run."""
        turns = {id(k.turn): key for key, k in self._keyed.items() if k.turn is not None}
        return [turns[id(turn)] for turn in self._waiting if id(turn) in turns]

    async def run(self, work: Callable[[*Ts], T], *args: *Ts, key: str | None = None) -> T:
        """``work(*args)`` in a worker thread, once a slot is free (``PoolFull`` if the queue
        is full). ``key``: what ``hurry`` knows it by (one piece of work a key: a second one
        under a key already queued or running is not keyed)."""
        if key is None or key in self._keyed:
            async with self.slot():
                return await anyio.to_thread.run_sync(work, *args)
        keyed = self._keyed[key] = Keyed()
        try:
            async with self.slot(keyed):
                return await anyio.to_thread.run_sync(work, *args)
        finally:
            del self._keyed[key]
            keyed.ended.set()

    def hurry(self, key: str) -> asyncio.Event | None:
        """Move the work queued under ``key`` to the front of the queue; the event its end
        sets (also when it is running already), or None if no work is under that key."""
        keyed = self._keyed.get(key)
        if keyed is None:
            return None
        turn = keyed.turn
        if turn is not None and not turn.done() and self._waiting[0] is not turn:
            self._waiting.remove(turn)  # at most ``queue`` long: a few hundred, once a session
            self._waiting.appendleft(turn)
        return keyed.ended

    def withdraw(self, key: str) -> bool:
        """Take the work queued under ``key`` out of the queue: its ``run`` raises ``Withdrawn``
        and the work never runs. False if that work is running already (it cannot be taken
        back); True otherwise (withdrawn, or nothing was under that key)."""
        keyed = self._keyed.get(key)
        if keyed is None or keyed.withdrawn:
            return True
        turn = keyed.turn
        if turn is None or turn.done():
            return False  # running (or handed its slot just now)
        self._waiting.remove(turn)
        keyed.withdrawn = True
        turn.set_exception(Withdrawn(key))
        return True

    @asynccontextmanager
    async def slot(self, keyed: Keyed | None = None) -> AsyncIterator[None]:
        no_longer_light()  # waiting for heavy work, or doing it, is not light work
        await self._acquire(keyed)
        started = time.monotonic()
        try:
            yield
        finally:
            self._mean += (time.monotonic() - started - self._mean) * 0.1
            self._release()

    def retry_after(self) -> int:
        """Seconds until the queue has likely moved by its own length: when to come back."""
        seconds = (len(self._waiting) + 1) * self._mean / self.workers
        return max(1, min(MAX_RETRY_AFTER, math.ceil(seconds)))

    async def _acquire(self, keyed: Keyed | None = None) -> None:
        if self.running < self.workers and not self._waiting:
            self.running += 1
            return
        if len(self._waiting) >= self.queue:
            raise PoolFull(self.retry_after())
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        if keyed is not None:
            keyed.turn = turn
        try:
            await turn  # resolved by _release: the slot is handed over, `running` unchanged
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release()  # it was handed a slot just as it was cancelled: pass it on
            elif turn in self._waiting:  # (a _release may have skipped it already)
                self._waiting.remove(turn)
            raise
        finally:
            if keyed is not None:
                keyed.turn = None

    def _release(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.running -= 1
