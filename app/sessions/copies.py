"""Making copies: new sessions in the live sessions cache, from a setup (``create``, or
``start`` as its log alone), from a snapshot, or forked from a lecture's moment; and snapshots,
frozen copies of a session's log.

The cache (``live.py``) holds sessions and knows nothing of how they were made; a new session
reaches it through ``LiveSessions.add`` (built here) or its replay (``LiveSessions.get``).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass

from app.db import DatabaseUnavailable, NoSuchLog, NotOwner
from app.engine.views import SessionView
from app.log.records import Setup
from app.log.timeline import Timeline
from app.sessions.journal import Journal
from app.sessions.live import LiveSession, LiveSessions, ServerFull, UnknownSession
from app.sessions.specs import tables_for

FORKED_KEPT = 8  # moments whose fork answer is kept (one per lecture being forked, and more)
STARTED_KEPT = 32  # setups whose new sessions start as their log alone (see start)


@dataclass(frozen=True)
class Fork:
    """A new fork: its id, and its Session as answered but the id, which is the same for every
    fork of that moment (``moment`` names it: read it, change nothing)."""

    id: str
    moment: str
    session: SessionView


def new_id() -> str:
    return secrets.token_urlsafe(16)  # 128 random bits


class Copies:
    """New sessions of one live sessions cache, and snapshots of its sessions' logs."""

    def __init__(self, sessions: LiveSessions) -> None:
        self.sessions = sessions
        self.db = sessions.db
        self._lock = threading.Lock()
        self._forked: OrderedDict[str, SessionView] = OrderedDict()  # a base's answer
        self._started: OrderedDict[str, Setup] = OrderedDict()  # by Setup.key(): as stored

    def create(self, setup: Setup) -> LiveSession:
        """A new session: its timeline built and its log started in the database."""
        self.sessions.make_room()
        # the database full: make room for a twentieth of it at once, not one log per creation
        if self.db.count() >= self.db.max_logs and (
            self.sessions.sweep(room=max(1, self.db.max_logs // 20)) == 0
            or self.db.count() >= self.db.max_logs
        ):
            raise ServerFull(f"the server holds its maximum of {self.db.max_logs} sessions")
        session_id = new_id()
        journal = Journal(self.db, session_id)
        tables_for(self.db, setup)
        timeline = Timeline(setup, journal)
        owner = self.db.create(session_id, timeline.setup)  # a new timeline has nothing to drain
        key = setup.key()
        with self._lock:  # its log alone makes the next one of this setup (see start)
            self._started[key] = timeline.setup
            self._started.move_to_end(key)
            while len(self._started) > STARTED_KEPT:
                self._started.popitem(last=False)
        session = LiveSession(session_id, timeline, owner, journal=journal)
        self.sessions.add(session)
        return session

    def start(self, setup: Setup) -> str | None:
        """A new session of a setup created before, as its log alone: its Lab is built when
        it is first needed (``warm``, or its first request). None, and nothing done, for a
        setup not created yet or when memory or the database must make room first."""
        key = setup.key()
        with self._lock:
            stored = self._started.get(key)
        if stored is None or not self.sessions.has_room():
            return None
        session_id = new_id()
        self.db.create(session_id, stored)
        self.sessions.starting(session_id, key)
        return session_id

    def from_snapshot(self, token: str) -> LiveSession:
        """A new session whose log is a copy of the snapshot's, standing at its moment."""
        session_id = new_id()
        try:
            self.db.open_snapshot(token, session_id)
        except NoSuchLog:
            raise UnknownSession(token) from None
        return self.sessions.get(session_id)  # a new id: never in memory, read back

    def fork(self, session_id: str) -> Fork:
        """See ``_fork``."""
        fork = self._fork(session_id, quick=False)
        assert fork is not None
        return fork

    def quick_fork(self, session_id: str) -> Fork | None:
        """A fork of a moment forked before (None, and nothing done, if not): it copies
        nothing and replays nothing, quick enough for the event loop."""
        return self._fork(session_id, quick=True)

    def _fork(self, session_id: str, *, quick: bool) -> Fork | None:
        """A new session at this one's newest saved moment, and its Session as answered.

        Needs no lock of the session: every action is saved (in one transaction) under its
        lock before it is answered, and the copy reads the stored log in one transaction (one
        snapshot of it), so it holds whole actions only, each one answered or being answered.
        The forks of one moment share its past in the database (``Database.fork``) and here
        its replay: the answer is the same for each but the id, so a class forking one lecture
        replays it once. The new session is replayed when it is first used (``warm``)."""
        new = new_id()
        try:
            forked = self.db.quick_fork(session_id, new) if quick else self.db.fork(session_id, new)
        except NoSuchLog:
            raise UnknownSession(session_id) from None
        if forked is None:
            return None
        with self._lock:
            shown = self._forked.get(forked.base)
        if shown is None:
            if quick:  # (its base is known but its answer is not: a rare miss; no harm done)
                self.db.delete(new)
                return None
            tables_for(self.db, forked.saved.setup)
            timeline = Timeline.restored(forked.saved, Journal(self.db, forked.base))
            shown = self.sessions.shown(new, timeline.view())  # a new id: no quiz of its own
            with self._lock:
                self._forked[forked.base] = shown
                while len(self._forked) > FORKED_KEPT:
                    self._forked.popitem(last=False)
        return Fork(new, forked.base, shown)

    def warm(self, session_id: str) -> None:
        """Bring a stored session into memory now (a fork or a started session, before its
        student's first click), unless it is there; a session gone meanwhile is no error."""
        with contextlib.suppress(UnknownSession, NotOwner, DatabaseUnavailable, ServerFull):
            self.sessions.get(session_id)

    def snapshot(self, session_id: str) -> str:
        """A frozen copy of the session's log under a new token (which reveals nothing of the
        session's id)."""
        token = secrets.token_urlsafe(16)
        self.db.snapshot(session_id, token)
        return token
