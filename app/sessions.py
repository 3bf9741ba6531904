"""Live sessions: one Lab each, behind an unguessable id, bounded in number and idle time."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from .engine import Lab


class UnknownSession(KeyError):
    pass


class StoreFull(Exception):
    pass


class SessionBusy(Exception):
    """Too many requests already wait for this session: one student must not fill the pool."""


@dataclass
class Session:
    id: str
    lab: Lab
    lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0  # requests queued behind the lock (the HTTP layer caps it)


class SessionStore:
    """Sessions in least-recently-used order, so the idle ones are always at the front."""

    def __init__(
        self,
        max_sessions: int,
        idle_timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_sessions, self.idle_timeout, self.clock = max_sessions, idle_timeout, clock
        self._sessions: OrderedDict[str, tuple[Session, float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def evict_idle(self) -> int:
        """Drop every session idle longer than the timeout; returns how many went."""
        gone = 0
        with self._lock:
            limit = self.clock() - self.idle_timeout
            while self._sessions:
                key, (_, used) = next(iter(self._sessions.items()))
                if used > limit:
                    break
                del self._sessions[key]
                gone += 1
        return gone

    def create(self, make_lab: Callable[[], Lab]) -> Session:
        self.evict_idle()
        if len(self._sessions) >= self.max_sessions:
            raise StoreFull(f"the server holds its maximum of {self.max_sessions} sessions")
        session = Session(secrets.token_urlsafe(16), make_lab())  # 128 random bits
        with self._lock:
            if len(self._sessions) >= self.max_sessions:  # filled while the lab was built
                raise StoreFull(f"the server holds its maximum of {self.max_sessions} sessions")
            self._sessions[session.id] = (session, self.clock())
        return session

    def get(self, session_id: str) -> Session:
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is None or entry[1] <= self.clock() - self.idle_timeout:
                raise UnknownSession(session_id)
            self._sessions[session_id] = (entry[0], self.clock())
            self._sessions.move_to_end(session_id)
            return entry[0]

    def delete(self, session_id: str) -> None:
        with self._lock:
            if self._sessions.pop(session_id, None) is None:
                raise UnknownSession(session_id)
