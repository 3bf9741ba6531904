"""Lectures across processes: several app processes on one PostgreSQL database (issue 12).

nginx sends the instructor's requests to the process their session id hashes to, and the
followers' to the one the join code hashes to: often another. The instructor's process writes
each event as before, and in the same transaction the whole view (what a follower that has
nothing starts from) and a NOTIFY on one channel naming the lecture and the event's number
(a few dozen bytes: PostgreSQL's limit is 8000). Every process LISTENs; one that has followers
of that lecture reads the new events from the database and streams them to its followers.

Nothing else travels between processes: a lecture unknown to a process is read from the database
when a follower or the instructor first names it (by code, or its session when it is loaded
here, e.g. after a takeover); votes go to the database, and the instructor's tally counts them
there; each process announces how many followers it has (on change and every few seconds),
and a tally adds the others' fresh counts to its own.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from app.db import Shared, SharedListener, StoredLecture
from app.lectures.broadcast import Lectures, Live
from app.lectures.poll import refreshed
from app.lectures.quizzes import Quiz

if TYPE_CHECKING:
    from app.lectures.lecture import Lecture
    from app.lectures.poll import Poll

CHANNEL = "loop_stepper_lectures"
HEARTBEAT = 5.0  # seconds between a process's follower counts; older than 3 of them: gone
BATCH = 200  # lecture codes per announcement of follower counts (well under 8000 bytes)


class Relay:
    """The ``Broadcast`` of several processes sharing one PostgreSQL database."""

    def __init__(
        self,
        lectures: Lectures,
        db: Shared,
        forget: Callable[[str], None],
        node: str | None = None,
    ) -> None:
        self.lectures = lectures
        self.db = db
        self.forget = forget  # drop this process's copy of a session another one claimed
        self.listener: SharedListener | None = None
        self.node = node or secrets.token_hex(6)  # this process, in announcements
        self.loop: asyncio.AbstractEventLoop | None = None
        self.remote: dict[str, dict[str, tuple[int, float]]] = {}  # code: node: (n, when)
        self.dirty: set[str] = set()  # lectures with events to read from the database
        self.counted_codes: set[str] = set()  # follower counts to announce
        self.wake = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.wake = asyncio.Event()
        self.listener = self.db.listen(CHANNEL, self._heard_anywhere)
        if self.listener is not None:  # notices sent while it was away are lost: read again
            self.listener.on_reconnect = lambda: self._heard_anywhere("")
        self.tasks = [loop.create_task(self._pull()), loop.create_task(self._announce())]

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()

    def _reread(self) -> None:
        self.dirty |= set(self.lectures.running)
        self.wake.set()

    def notice(self, kind: str, **fields: Any) -> str:
        return json.dumps({"k": kind, "node": self.node, **fields}, separators=(",", ":"))

    # -- the instructor's process ----------------------------------------------------

    def started(self, lecture: Lecture, whole: Callable[[], bytes]) -> None:
        """Other processes' followers start from the stored view."""
        full = whole()
        self.db.lecture_set_full(lecture.code, lecture.seq, full.decode())
        lecture.full = (lecture.seq, full)

    def publish(self, lecture: Lecture, body: bytes, whole: Callable[[], bytes]) -> None:
        """The event, the whole view and the announcement, in one transaction."""
        full = whole()
        notice = self.notice("event", code=lecture.code, seq=lecture.seq)
        self.db.lecture_publish(
            lecture.code,
            lecture.seq,
            lecture.losses,
            body.decode(),
            full.decode(),
            (CHANNEL, notice),
        )
        lecture.full = (lecture.seq, full)

    def ended(self, lecture: Lecture) -> None:
        self.db.notify(CHANNEL, self.notice("end", code=lecture.code))

    def tally(self, lecture: Lecture) -> dict[str, Any]:
        """Every process's votes (the database) and followers (their announcements)."""
        counts = self.db.lecture_counts(lecture.code)
        return lecture.tally(counts, self._others(lecture))

    def poll_counts(self, lecture: Lecture, poll: Poll) -> tuple[list[dict[str, int]], int]:
        """Every process's votes (the database) and followers (their announcements)."""
        return self.db.poll_counts(lecture.code, poll.n), self._others(lecture)

    def _others(self, lecture: Lecture) -> int:
        fresh = time.monotonic() - 3 * HEARTBEAT
        heard = list(self.remote.get(lecture.code, {}).values())
        return sum(n for n, when in heard if when > fresh)

    # -- finding lectures in the database -------------------------------------------------

    def find(self, code: str) -> Lecture | None:
        stored = self.db.lecture(code)
        return None if stored is None else self._known(stored)

    def of_session(self, session_id: str) -> Lecture | None:
        stored = self.db.lecture_of(session_id)
        return None if stored is None else self._known(stored)

    def _known(self, stored: StoredLecture) -> Lecture | None:
        if stored.expires <= self.lectures.clock():
            return None
        return self.lectures.known(stored)

    def adopt(self, session_id: str) -> None:
        """A session loaded (and claimed) here, in a thread: the others drop their copies;
        its lecture as the database has it now (the process that held it may have published
        since), and its self-study quiz."""
        self.db.notify(CHANNEL, self.notice("claimed", session=session_id))
        quiz = self.db.self_quiz_of(session_id)
        if quiz is not None:
            self.lectures.study.quizzes[session_id] = quiz
        stored = self.db.lecture_of(session_id)
        if stored is None:
            return
        lecture = self.lectures.running.get(stored.code)
        if lecture is None:
            self._known(stored)
            return
        lecture.seq, lecture.losses = stored.seq, stored.losses
        lecture.quiz = Quiz.from_json(stored.quiz) if stored.quiz else None
        lecture.poll = refreshed(lecture.poll, stored.poll)
        lecture.full = None
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._mark, stored.code)

    # -- the followers' processes ----------------------------------------------------

    async def exists(self, lecture: Lecture, touch: Callable[[], Awaitable[object]]) -> bool:
        return True  # the session may be held by another process: the stored view says

    async def whole(self, lecture: Lecture, live: Live) -> tuple[int, bytes]:
        """The whole view at the newest event (as the instructor's process stored it)."""
        cached = lecture.full
        if cached is not None and cached[0] >= lecture.delivered:
            return cached
        got = await anyio.to_thread.run_sync(self.db.lecture_full, lecture.code)
        if got is None:
            raise KeyError(lecture.code)  # the lecture ended
        lecture.full = (got[0], got[1].encode())
        return lecture.full

    async def current(self, lecture: Lecture, live: Live) -> bytes | None:
        """The whole view as stored now (None: the lecture ended, maybe a moment ago on
        another process, before its notice came here)."""
        got = await anyio.to_thread.run_sync(self.db.lecture_full, lecture.code)
        if got is None:
            self.lectures.drop(lecture)
            return None
        if lecture.full is None or got[0] >= lecture.full[0]:
            lecture.full = (got[0], got[1].encode())
        return got[1].encode()

    def _heard_anywhere(self, payload: str) -> None:
        """The database's listener (any thread): hand the notice to the event loop."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._heard, payload)

    def _heard(self, payload: str) -> None:
        if not payload:  # the listener connected again: what was sent meanwhile is lost
            self._reread()
            return
        notice = json.loads(payload)
        if notice.get("node") == self.node:
            return
        if notice["k"] == "claimed":  # another process replayed it: this copy is stale
            self.forget(notice["session"])
        elif notice["k"] == "followers":
            now = time.monotonic()
            for code, n in notice["counts"].items():
                self.remote.setdefault(code, {})[notice["node"]] = (n, now)
        elif notice["code"] in self.lectures.running:  # an event or the end of one followed here
            self._mark(notice["code"])

    def _mark(self, code: str) -> None:
        self.dirty.add(code)
        self.wake.set()

    async def _pull(self) -> None:
        """Read the events other processes announced, one lecture at a time, in order."""
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.dirty:
                code = self.dirty.pop()
                lecture = self.lectures.running.get(code)
                if lecture is None:
                    continue
                stored, events = await anyio.to_thread.run_sync(self._read, code, lecture.delivered)
                self._apply(lecture, stored, events)

    def _read(self, code: str, after: int) -> tuple[StoredLecture | None, list[tuple[int, str]]]:
        # the events first: the lecture's row, read after them, holds at least their quiz and poll
        events = self.db.lecture_events(code, after)
        return self.db.lecture(code), events

    def _apply(
        self, lecture: Lecture, stored: StoredLecture | None, events: list[tuple[int, str]]
    ) -> None:
        if stored is None:  # ended (or expired and gone)
            self.lectures.drop(lecture)
            return
        quiz = Quiz.from_json(stored.quiz) if stored.quiz else None
        if quiz != lecture.quiz:
            old = lecture.quiz
            if quiz is not None and not quiz.revealed and (old is None or old.revealed):
                lecture.ballot.clear()  # a new quiz: its votes start over
            lecture.quiz = quiz
        lecture.poll = refreshed(lecture.poll, stored.poll)
        if stored.seq >= lecture.seq:
            lecture.seq, lecture.losses = stored.seq, stored.losses
        lecture.expires = stored.expires
        for seq, body in events:
            self.lectures.deliver(lecture, seq, body.encode())

    # -- follower counts -------------------------------------------------------------

    def counted(self, lecture: Lecture) -> None:
        self.counted_codes.add(lecture.code)

    async def _announce(self) -> None:
        """This process's follower counts: soon after a change, and every HEARTBEAT."""
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.5)
            now = time.monotonic()
            codes = set(self.counted_codes)
            self.counted_codes.clear()
            if now - last >= HEARTBEAT:
                last = now
                codes |= {c for c, lec in self.lectures.running.items() if lec.followers}
                stale = now - 3 * HEARTBEAT  # counts of processes gone, of lectures ended
                for code, heard in list(self.remote.items()):
                    for node, (_, when) in list(heard.items()):
                        if when < stale:
                            del heard[node]
                    if not heard:
                        del self.remote[code]
            if not codes:
                continue
            running = self.lectures.running
            counts = {c: lec.followers if (lec := running.get(c)) else 0 for c in codes}
            items = sorted(counts.items())
            for i in range(0, len(items), BATCH):
                notice = self.notice("followers", counts=dict(items[i : i + BATCH]))
                await anyio.to_thread.run_sync(self.db.notify, CHANNEL, notice)
