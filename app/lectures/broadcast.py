"""How a lecture's changes reach its followers: the one interface the hub talks to.

A ``Broadcast`` is what differs between one process holding every lecture (``Alone``, here) and
several processes sharing one PostgreSQL database (``Relay``, ``relay.py``): where an event is
written, where a lecture unknown to this process is looked up, where a follower that has nothing
gets the whole Session from, and how the tally counts. The hub (``hub.py``) never asks
which one it has.

A broadcast acts on this process's lectures only through ``Lectures``: the callbacks the hub
hands it, never the hub itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from app.db import Database, StoredLecture
from app.lectures.quizzes import SelfStudy

if TYPE_CHECKING:
    from app.lectures.lecture import Lecture
    from app.lectures.poll import Poll

# the whole Session as one event numbered like the newest, as the session in memory makes it
Live = Callable[[], Awaitable[tuple[int, bytes]]]


@dataclass(frozen=True)
class Lectures:
    """What a broadcast may do to this process's lectures (the hub's side)."""

    running: Mapping[str, Lecture]  # by code, read only
    known: Callable[[StoredLecture], Lecture]  # a stored lecture, kept here from now on
    deliver: Callable[[Lecture, int, bytes], None]  # an event to this process's followers
    drop: Callable[[Lecture], None]  # an ended lecture: its followers get `end`
    study: SelfStudy  # the self-study quizzes by session
    clock: Callable[[], float]


class Broadcast(Protocol):
    tasks: list[asyncio.Task[None]]  # what runs on the event loop while the app does

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start (on ``loop``): the running lectures, or how to hear of them."""

    def close(self) -> None: ...

    def find(self, code: str) -> Lecture | None:
        """A running lecture this process does not hold yet (None: there is none)."""

    def of_session(self, session_id: str) -> Lecture | None: ...

    def adopt(self, session_id: str) -> None:
        """A session just read back from the database (in a thread)."""

    def started(self, lecture: Lecture, whole: Callable[[], bytes]) -> None:
        """A new lecture (under its session's lock)."""

    def publish(self, lecture: Lecture, body: bytes, whole: Callable[[], bytes]) -> None:
        """Write event ``lecture.seq`` (under the session's lock); ``whole`` makes the whole
        Session after it."""

    def ended(self, lecture: Lecture) -> None: ...

    def counted(self, lecture: Lecture) -> None:
        """The number of followers connected here changed."""

    def tally(self, lecture: Lecture) -> dict[str, Any]:
        """The quiz's tally (may read the database: call it off the event loop)."""

    def poll_counts(self, lecture: Lecture, poll: Poll) -> tuple[list[dict[str, int]], int]:
        """The votes on the class's poll, per round by vote, and the followers
        connected to other processes (may read the database: off the event loop)."""

    async def exists(self, lecture: Lecture, touch: Callable[[], Awaitable[object]]) -> bool:
        """Is the lecture's session still there (before a follower's stream starts)?
        ``touch`` reaches the session in memory (UnknownSession, a KeyError: it is gone)."""

    async def whole(self, lecture: Lecture, live: Live) -> tuple[int, bytes]:
        """For a follower that has nothing, or is too far behind: the whole Session."""

    async def current(self, lecture: Lecture, live: Live) -> bytes | None:
        """The whole Session as it is now (None: the lecture has ended)."""


class Alone:
    """One process holds every lecture: the events go to the database (for restarts) and to the
    followers connected here, the whole Session comes from the session in memory."""

    def __init__(self, lectures: Lectures, db: Database) -> None:
        self.lectures = lectures
        self.db = db
        self.tasks: list[asyncio.Task[None]] = []

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        for stored in self.db.lectures(self.lectures.clock()):
            self.lectures.known(stored)
        self.lectures.study.load()

    def close(self) -> None:
        pass

    def find(self, code: str) -> Lecture | None:
        return None  # every lecture is held here from the start

    def of_session(self, session_id: str) -> Lecture | None:
        return None

    def adopt(self, session_id: str) -> None:
        pass

    def started(self, lecture: Lecture, whole: Callable[[], bytes]) -> None:
        pass

    def publish(self, lecture: Lecture, body: bytes, whole: Callable[[], bytes]) -> None:
        self.db.lecture_event(lecture.code, lecture.seq, lecture.losses, body.decode())

    def ended(self, lecture: Lecture) -> None:
        pass

    def counted(self, lecture: Lecture) -> None:
        pass

    def tally(self, lecture: Lecture) -> dict[str, Any]:
        return lecture.tally()

    def poll_counts(self, lecture: Lecture, poll: Poll) -> tuple[list[dict[str, int]], int]:
        return poll.counts(), 0

    async def exists(self, lecture: Lecture, touch: Callable[[], Awaitable[object]]) -> bool:
        try:
            await touch()
        except KeyError:  # UnknownSession: deleted, and so is its lecture
            return False
        return True

    async def whole(self, lecture: Lecture, live: Live) -> tuple[int, bytes]:
        return await live()

    async def current(self, lecture: Lecture, live: Live) -> bytes | None:
        return (await live())[1]
