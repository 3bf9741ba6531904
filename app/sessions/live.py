"""Sessions: each a Timeline behind an unguessable id, its log in the database, the recently used
ones live in memory.

Memory holds at most ``max_live`` sessions; one idle for ``idle_timeout`` seconds, or the least
recently used when room is needed, leaves memory but not the database: its next request replays
it from its log (``Timeline.restored``). A session is gone only when the database deletes it
(retention, caps) or its owner does.

Several processes may share one database (PostgreSQL, or one SQLite file): the one that replays
a session claims it (its owner epoch, ``Database.claim``) and every save checks the epoch. A
process whose session was claimed by another since gets ``NotOwner`` on its next save: it drops
its copy, replays the session from the database (claiming it back: the request came to it, so it
is the one being routed the session now) and runs the action again on the fresh replay, as if
it had never held the stale copy (``LiveSessions.act``).

New sessions and copies of logs (create, start, forks, snapshots) are made by ``copies.py``.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from app.db import Database, DatabaseUnavailable, NoSuchLog, NotOwner
from app.engine.views import SessionView
from app.log.records import Change, Event
from app.log.timeline import KEYFRAME_EVERY, Timeline
from app.sessions.journal import Journal, KeyframeWriter
from app.sessions.specs import tables_for

T = TypeVar("T")


def stagger() -> int:
    """A session read back (a class's started ones: their logs alone) takes its first keyframe
    a random number of events later: a class created at once and clicking in step would
    otherwise take its 300 keyframes in the same second (a storm of copies and writes: 0.5 s
    of p99 on a model of 94k parameters)."""
    return secrets.randbelow(KEYFRAME_EVERY)


class UnknownSession(KeyError):
    pass


class ServerFull(Exception):
    pass


class SessionBusy(Exception):
    """Too many requests already wait for this session: one student must not fill the pool."""


@dataclass
class LiveSession:
    id: str
    timeline: Timeline
    owner: int = 0  # the owner epoch this process claimed the session's log with
    lock: threading.Lock = field(default_factory=threading.Lock)
    # requests on the event loop queue here in order, with no thread each: only the one at
    # the front waits for ``lock`` in a thread (so a flood of one session cannot fill the pool)
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0  # requests queued for their turn (the HTTP layer caps it)
    gone: bool = False  # left memory: a request that still holds it must look it up again
    journal: Journal | None = None


def as_is(session_id: str, data: SessionView) -> SessionView:
    """No lectures: a Session is answered as its timeline made it."""
    return data


def unheard(*_: object) -> None:
    """No lectures: nobody listens."""


@dataclass(frozen=True)
class Hooks:
    """What the lectures (``app/lectures/hub.py``) hear of the sessions and add to them, given
    at construction: the hub is built first (it needs only the database)."""

    on_change: Callable[[LiveSession, Change], None] = unheard  # a change saved, under the lock
    shown: Callable[[str, SessionView], SessionView] = as_is  # a Session as answered
    on_load: Callable[[str], None] = unheard  # a session read back from the database


class LiveSessions:
    """The live sessions cache: the sessions in memory in least-recently-used order (the idle
    ones at the front), over the database."""

    def __init__(
        self,
        db: Database,
        max_live: int,
        idle_timeout: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        hooks: Hooks = Hooks(),
        pause: Callable[[], None] = lambda: None,
    ) -> None:
        """``pause``: the keyframe writer's, before each chunk (light work first)."""
        self.db = db
        self.max_live = max_live
        self.idle_timeout = idle_timeout
        self.clock = clock
        self.hooks = hooks
        self._live: OrderedDict[str, tuple[LiveSession, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._starting: dict[str, float] = {}  # started, not in memory yet: since when
        self._untouched: dict[str, str] = {}  # of those, the ones with no event: their setup's key
        self.keyframes = KeyframeWriter(db, pause)

    def __len__(self) -> int:
        return len(self._live)

    def evict_idle(self) -> int:
        """Let every session idle longer than the timeout leave memory; returns how many went."""
        gone: list[str] = []
        with self._lock:
            limit = self.clock() - self.idle_timeout
            idle = []  # the idle ones are at the front: no copy of the whole cache per creation
            for key, (session, used) in self._live.items():
                if used > limit:
                    break
                idle.append((key, session))
            for key, session in idle:
                if self._release(session):
                    del self._live[key]
                    gone.append(key)
            # started and never used since: stored sessions like any other now
            for key in [k for k, since in self._starting.items() if since <= limit]:
                del self._starting[key]
                self._untouched.pop(key, None)
        if gone:
            self.db.touch(gone)  # their retention counts from their last use, about now
        return len(gone)

    def sweep(self, room: int = 0) -> int:
        """The database's retention and caps; sessions live in memory are kept (and touched)."""
        with self._lock:
            live = list(self._live)
            starting = list(self._starting)  # in use too, their Labs not built yet
        self.db.touch(live)
        return self.db.sweep([*live, *starting], room)

    @staticmethod
    def _release(session: LiveSession) -> bool:
        """Mark a session as out of memory, unless a request is using it right now."""
        if session.waiting or not session.lock.acquire(blocking=False):
            return False
        session.gone = True
        session.lock.release()
        return True

    def _evict_lru(self) -> None:
        """Called with the lock held, when memory is full: the least recently used idle session
        leaves it (``ServerFull`` if every one is in use)."""
        if len(self._live) < self.max_live:
            return
        for key, (session, _) in self._live.items():
            if self._release(session):
                del self._live[key]
                self.db.touch([key])
                return
        raise ServerFull(f"the server holds its maximum of {self.max_live} sessions in use")

    def make_room(self) -> None:
        """Room in memory for one more session, made before it is built: the idle sessions
        leave, and if it is still full, the least recently used one."""
        self.evict_idle()
        with self._lock:
            self._evict_lru()

    def add(self, session: LiveSession) -> None:
        """A session just made (``copies.py``) or read back, now in memory."""
        with self._lock:
            self._evict_lru()
            self._live[session.id] = (session, self.clock())

    def starting(self, session_id: str, setup_key: str | None = None) -> None:
        """A session stored as its log alone (``Copies.start``): in use before its first
        request builds its Lab, so a sweep keeps it until it idles out."""
        with self._lock:
            self._starting[session_id] = self.clock()
            if setup_key is not None:
                self._untouched[session_id] = setup_key

    def untouched(self, session_id: str) -> str | None:
        """The setup key of a session this process started that nothing was done to yet."""
        with self._lock:
            return self._untouched.get(session_id)

    def first_line(self, session_id: str, setup_key: str, event: Event) -> bool:
        """Write ``event`` as the first of a started session's log, if it is one of
        ``setup_key``'s, in this process's database, not in memory, and nothing was done to it
        yet (the first line a class shares: ``app/web/firsts.py``). False, and nothing written,
        otherwise (or when another process took it over): the request goes the usual way."""
        if self.db.shared() is not None:
            return False
        with self._lock:
            if self._untouched.get(session_id) != setup_key or session_id in self._live:
                return False
            del self._untouched[session_id]
        try:
            self.db.append(session_id, Change(events=[(0, event)]), owner=1)  # Copies.start's
        except (NotOwner, NoSuchLog):
            return False
        return True

    def shown(self, session_id: str, data: SessionView) -> SessionView:
        """A Session as answered (the lectures' hook: a self-study question hides its program)."""
        return self.hooks.shown(session_id, data)

    def has_room(self) -> bool:
        """Whether a session can be created without making room first (quick: no sweep)."""
        return len(self._live) < self.max_live and self.db.count() < self.db.max_logs

    def live(self, session_id: str) -> LiveSession | None:
        """The session if it is in memory (fast: no store access)."""
        with self._lock:
            entry = self._live.get(session_id)
            if entry is None:
                return None
            self._live[session_id] = (entry[0], self.clock())
            self._live.move_to_end(session_id)
            return entry[0]

    def get(self, session_id: str) -> LiveSession:
        """The session, read back from the database if it is not in memory (slow: call it off
        the event loop)."""
        return self.live(session_id) or self._load(session_id)

    def quick_to_build(self, session_id: str) -> bool:
        """Whether the session, not in memory, can be built on the event loop: started as its
        log alone (``Copies.start``: building it costs what a creation does, ~0.3 ms) on a
        database in this process. Not on PostgreSQL: a read-back there is several round trips
        (the claim, the lectures' ``adopt``), each a wait for every request on the loop."""
        if self.db.shared() is not None:
            return False
        with self._lock:
            return session_id in self._starting

    def load_now(self, session_id: str) -> LiveSession | None:
        """The session read back from the database here and now, unless another thread is
        reading it back (None: never waits, so it may run on the event loop for a session as
        quick to build as a started one)."""
        loading = threading.Lock()
        loading.acquire()  # held before any other thread can find it: nothing here waits
        with self._lock:
            if session_id in self._loading:
                return None
            self._loading[session_id] = loading
        try:
            return self._read_back(session_id)
        finally:
            loading.release()

    def _load(self, session_id: str) -> LiveSession:
        with self._lock:
            loading = self._loading.setdefault(session_id, threading.Lock())
        with loading:  # two requests for one stored session: one replays, one waits
            return self._read_back(session_id)

    def _read_back(self, session_id: str) -> LiveSession:
        """Called holding the session's ``_loading`` lock."""
        try:
            session = self.live(session_id)
            if session is not None:
                return session
            try:
                stored, owner = self.db.claim(session_id)
            except NoSuchLog:
                raise UnknownSession(session_id) from None
            journal = Journal(self.db, session_id)
            tables_for(self.db, stored.setup)  # a spec's CSV file, before its Lab is built
            timeline = Timeline.restored(stored, journal, stagger())
            session = LiveSession(session_id, timeline, owner, journal=journal)
            self.hooks.on_load(session_id)
            self.add(session)
            return session
        finally:
            with self._lock:
                self._loading.pop(session_id, None)
                self._starting.pop(session_id, None)
                self._untouched.pop(session_id, None)

    def act(
        self, session: LiveSession, action: Callable[[Timeline], T], *, replay: bool = True
    ) -> T:
        """Run ``action`` on the session's timeline and save what it did (under the session's
        lock, before answering). If another process claimed the session since this one replayed
        it, the stale copy is dropped and the action runs again on a fresh replay, which this
        process claims back (``replay=False``: ``NotOwner`` is raised once the copy is dropped,
        for a caller that must not replay here, e.g. on the event loop)."""
        # a long run writes as it goes; its keyframes wait for its end (the writer would
        # wait for the session's lock, which the run holds)
        session.timeline.save = lambda: self.save(session, keyframes=False)
        try:
            try:
                return action(session.timeline)
            finally:
                self.save(session)  # a line that failed in PyTorch is in the log too
        except NotOwner:
            self._drop(session)
            if not replay:
                raise
        while True:
            fresh = self._load(session.id)
            with fresh.lock:
                if not fresh.gone:
                    return self.act(fresh, action)

    def _drop(self, session: LiveSession) -> None:
        """Forget a session's stale copy (another process claimed its log)."""
        session.gone = True
        with self._lock:
            entry = self._live.get(session.id)
            if entry is not None and entry[0] is session:
                del self._live[session.id]

    def save(self, session: LiveSession, *, keyframes: bool = True) -> None:
        """Write what the last action did; called under the session's lock, before answering.
        ``NotOwner`` if another process claimed the session since (see ``act``): checked by
        the write itself, or, when the action wrote nothing (a read), by one lookup, so that
        a stale copy never answers."""
        change = session.timeline.drain()
        if session.journal is not None:  # its keyframes are written after the answer
            session.journal.settle(change)
        try:
            if change:
                self.db.append(session.id, change, session.owner)
            else:
                self.db.check_owner(session.id, session.owner)
        except NoSuchLog:
            raise UnknownSession(session.id) from None
        except DatabaseUnavailable:  # lost, or full (``StorageFull``)
            # the copy in memory is ahead of the log now: the next request replays the log,
            # and no keyframe this copy took may reach the database after it
            if session.journal is not None:
                session.journal.pending.clear()
            self._drop(session)
            raise
        if keyframes and session.journal is not None and session.journal.pending:
            self.keyframes.submit(session)
        if change:
            self.hooks.on_change(session, change)

    def close(self) -> None:
        """Write the keyframes still pending, then close the database."""
        self.keyframes.close()
        self.db.close()

    def forget(self, session_id: str) -> None:
        """Drop this process's copy of a session another process claimed (its next request
        here replays it from the database)."""
        with self._lock:
            entry = self._live.pop(session_id, None)
        if entry is not None:
            entry[0].gone = True

    def delete(self, session_id: str) -> None:
        with self._lock:
            loading = self._loading.setdefault(session_id, threading.Lock())
        with loading:  # a replay under way (a warm-up) ends first: it would bring it back
            try:
                with self._lock:
                    entry = self._live.pop(session_id, None)
                    self._starting.pop(session_id, None)
                    self._untouched.pop(session_id, None)
                    if entry is not None:
                        entry[0].gone = True
                if not self.db.delete(session_id) and entry is None:
                    raise UnknownSession(session_id)
            finally:
                with self._lock:
                    if self._loading.get(session_id) is loading:
                        del self._loading[session_id]
