"""What the routes share: the dependencies (the live sessions, a session to act on, the
lecture hub), how a request takes its turn on a session, the one JSON encoder, and the errors
every session route may answer. A routes module imports from here, never from another routes
module."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import anyio.to_thread
import pydantic_core
from fastapi import Depends, Query, Request, Response
from starlette.background import BackgroundTask

from app.db import NotOwner
from app.engine.changes import START, marks
from app.engine.views import SessionView
from app.lectures.hub import LectureHub
from app.lectures.lecture import Lecture
from app.lectures.quizzes import LectureConflict
from app.log.timeline import Timeline, TimelineError
from app.sessions.copies import Copies
from app.sessions.live import LiveSession as LiveSession
from app.sessions.live import LiveSessions, SessionBusy
from app.web import firsts
from app.web.answers import Problem
from app.web.firsts import FIRSTS
from app.web.pool import HeavyPool, PoolFull, Withdrawn, no_longer_light


async def get_sessions(request: Request) -> LiveSessions:  # async: no thread hop for a lookup
    sessions: LiveSessions = request.app.state.sessions
    return sessions


Sessions = Annotated[LiveSessions, Depends(get_sessions)]
# requests that may queue for one session (each costs a coroutine, not a thread): a page asks
# once at a time, a burst right after a session is created or read back may queue a few more
MAX_WAITING = 16
ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such session (or it expired)"},
    409: {"model": Problem, "description": "the line cannot run now; PyTorch's own message"},
    429: {"model": Problem, "description": f"{MAX_WAITING} requests already wait for this session"},
    507: {"model": Problem, "description": "the database's disk is full: nothing was saved"},
}
HEAVY_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    503: {"model": Problem, "description": "heavy work is queued past its bound: Retry-After"},
}
MAX_SINCE = 2**53  # the largest ``since`` (JSON's largest exact integer)
# ``?held=``: an answer's ``version``, ``start`` (the creation's answer) or ``none``
HELD_PATTERN = r"^(none|start|[0-9a-f]{1,16}\.[0-9]{1,16})$"


class JSONResponse(Response):
    """JSON with non-finite numbers as "NaN", "Infinity", "-Infinity": JSON has no such
    numbers, and a student who makes training diverge must still get a valid answer.

    Encoded by pydantic-core (Rust), about 8 times faster than the stdlib ``json`` that
    Starlette's own ``JSONResponse`` uses (bench/encode.py): every answer, errors included,
    goes through this one encoder."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return pydantic_core.to_json(content, inf_nan_mode="strings")


def as_json(data: Any, status: int = 200) -> Response:
    """``data`` as JSON (see ``JSONResponse``).

    The engine builds its answers in the schema's shape (a test holds every one to the
    model), so they are serialized directly: FastAPI's validation of a returned dict would
    cost more than running the line."""
    return JSONResponse(data, status_code=status)


def created(sessions: LiveSessions, session: LiveSession) -> Response:
    """A new session's answer: its whole Session."""
    data = sessions.shown(session.id, {"id": session.id, **session.timeline.view()})
    return as_json(data, status=201)


def warming(pool: HeavyPool, copies: Copies, session_id: str) -> BackgroundTask:
    """After a new session's answer (a fork, a started session): bring it into memory through
    the heavy-work pool, behind the work queued by then, so that its student's first click
    finds it there. An overloaded pool leaves that to the first click. No pause for light work
    here: a warm-up is a millisecond or two, and one pausing in its slot would keep a class's
    first clicks (heavy until their sessions are in memory) queued behind 300 sleeping ones.
    Queued under the session's id: its student's first request builds it first (``take``).

    A started session whose setup's first line the class already shares (``firsts.py``) is
    not built when its turn comes: its first click needs no Lab, and the class's builds then
    come at their second clicks, spread over a second, not in the burst of their first."""

    def warm(session_id: str) -> None:
        setup_key = copies.sessions.untouched(session_id)
        if setup_key is None or not FIRSTS.knows(setup_key):
            copies.warm(session_id)

    async def after() -> None:
        with contextlib.suppress(PoolFull, Withdrawn):  # withdrawn: its request built it
            await pool.run(warm, session_id, key=session_id)

    return BackgroundTask(after)


@dataclass
class SessionTarget:
    """One request on one session: which, and from which database."""

    sessions: LiveSessions
    session_id: str
    pool: HeavyPool

    async def use(self, read: Callable[[Timeline], Any], *, heavy: bool = False) -> Response:
        """Answer with what ``read`` takes from the session's Timeline, as JSON."""
        return as_json(await self.take(read, heavy=heavy))

    async def take(self, read: Callable[[Timeline], Any], *, heavy: bool = False) -> Any:
        """What ``read`` takes from the session's Timeline, alone: concurrent requests on it
        take turns. Whatever ``read`` changed is in the database before the answer goes out. The
        result is plain data made fresh under the lock (the engine never changes it
        afterwards), so it is turned into JSON after the lock is let go.

        A line on these tiny models takes less time than handing it to a worker thread, so
        it runs right here when the session is in memory and free. Otherwise a request waits
        for its turn here, in order and with no thread of its own, then for the session's lock
        in a thread (another request's, a run's or the keyframe writer's). A ``heavy`` action
        (``run``), and a session that must be read back from the database, go through the
        heavy-work pool (``pool.py``): the event loop never waits on a lock or a replay, and a
        line never waits behind them.

        A session whose build is queued after its answer (``warming``: a class that just
        created or forked at once) is built first, not behind everyone's (``_built``).
        """
        session = self.sessions.live(self.session_id) or await self._built()
        if (
            session is not None
            and not heavy
            and not session.waiting  # none queued before it (nor about to take its turn)
            and session.lock.acquire(blocking=False)
        ):
            held = session
            try:
                if not held.gone:
                    return self.sessions.act(held, read, replay=False)
            except NotOwner:  # another process took it since: dropped, replayed in a thread
                session = None
            finally:
                held.lock.release()
        if session is None:
            return await self.pool.run(self._locked, None, read)
        # a page waits for each answer before it asks again, so a queue this long is a flood
        if session.waiting >= MAX_WAITING:
            raise SessionBusy(self.session_id)
        session.waiting += 1  # only ever changed on the event loop's thread: no race
        try:
            no_longer_light()  # it may wait for the session's run: that run must not wait for it
            async with session.turn:
                if heavy:
                    return await self.pool.run(self._locked, session, read)
                return await anyio.to_thread.run_sync(self._locked, session, read)
        finally:
            session.waiting -= 1

    async def _built(self) -> LiveSession | None:
        """A session not in memory, built now if its build waits in the pool's queue.

        A started session (``Copies.start``: its log alone) on SQLite is built right here on
        the event loop, as a creation is (a fraction of a millisecond; in a worker thread it
        would fight the event loop's burst of creations for the interpreter), and its queued
        build is withdrawn (``LiveSessions.quick_to_build`` says when). Any other (a fork: a
        replay; any session on PostgreSQL) has its build moved to the front of the queue and
        waits for it alone. None: not built here (no build queued, or another thread is
        reading it back); the request then takes the usual way."""
        sid = self.session_id
        if self.sessions.quick_to_build(sid) and self.pool.withdraw(sid):
            session = self.sessions.load_now(sid)
            if session is not None:
                return session
        built = self.pool.hurry(sid)
        if built is None:
            return None
        no_longer_light()  # it waits for heavy work: that work must not wait for it
        await built.wait()
        return self.sessions.live(sid)  # None: gone meanwhile, or its build failed

    def _locked(self, session: LiveSession | None, read: Callable[[Timeline], Any]) -> Any:
        while True:  # a session that left memory meanwhile is read back from the database
            if session is None or session.gone:
                session = self.sessions.get(self.session_id)
            with session.lock:
                if not session.gone:
                    return self.sessions.act(session, read)  # replayed if another process took it


@dataclass
class SessionCall(SessionTarget):
    """A request that answers with the Session, and how much of its history to send."""

    since: int
    # a line's ``?moment=N``: the moment it is meant to make (the page sends it, so a line sent
    # again after its connection dropped without an answer does not run twice)
    moment: int | None = None
    # ``?held=V``: the version of the answer the client holds; the answer leaves out the stores
    # equal to that one's (``app/engine/changes.py``)
    held: str | None = None

    async def act(self, action: Callable[[Timeline], Any], *, heavy: bool = False) -> Response:
        """Run one action on the session's Timeline and answer with the Session after it."""

        def read(timeline: Timeline) -> SessionView:
            self.hold(timeline)
            action(timeline)
            return self.session(timeline)

        return await self.use(read, heavy=heavy)

    async def line(self, action: Callable[[Timeline], Any], asked: str) -> Response:
        """A line (``asked``: its name, ``next`` or the entry): as ``act``, but with
        ``?moment=N`` run only from moment N - 1. At moment N already, at the newest moment,
        the line has run (the answer was lost on the way): the Session at N is the answer,
        nothing runs again. Anywhere else, a 409. A class's first line from a setup's start is
        run once for all (``firsts.py``)."""
        first = self.held == START and self.since == 0 and self.moment in (None, 1)
        key = FIRSTS.first_of(self.sessions, self.session_id, asked) if first else None
        if key is not None:
            shared = await FIRSTS.answer(self.sessions, self.session_id, key)
            if shared is not None:
                return shared
        meant = self.moment

        def read(timeline: Timeline) -> SessionView:
            self.hold(timeline)
            fresh = not timeline.events
            now = timeline.moment
            if meant is None or not (now == meant and now == timeline.moments):
                if meant is not None and now != meant - 1:
                    raise TimelineError(
                        f"this line was sent to make moment {meant}, but the session stands "
                        f"at moment {now}: nothing ran (reload to see it)"
                    )
                action(timeline)
            answer = self.session(timeline)
            if first and fresh:  # its first line from the start, held: the class's to share
                FIRSTS.offer(timeline, asked, answer)
            return answer

        if key is None:
            return await self.use(read)
        async with FIRSTS.flight(key):  # the class's others of this first line wait for it
            return await self.use(read)

    def hold(self, timeline: Timeline) -> None:
        """Before the action: what ``held`` names that only the log says (``firsts.hold``)."""
        if self.held is not None:
            firsts.hold(timeline, self.held)

    def session(self, timeline: Timeline) -> SessionView:
        """The Session as this request answers it (under the session's lock): the stores the
        client holds left out."""
        data = self.sessions.shown(
            self.session_id, {"id": self.session_id, **timeline.view(self.since)}
        )
        return timeline.answers.answer(data, lambda: marks(timeline.lab, data), self.held)


# these two read the database off the app themselves: one dependency level less on every line
async def session_target(session_id: str, request: Request) -> SessionTarget:
    return SessionTarget(request.app.state.sessions, session_id, request.app.state.pool)


async def session_call(
    session_id: str,
    request: Request,
    since: Annotated[
        int,
        Query(
            ge=0, le=MAX_SINCE, description="send only the history points numbered this or later"
        ),
    ] = 0,
    moment: Annotated[
        int | None,
        Query(
            ge=1,
            le=MAX_SINCE,
            description="a line: the moment it makes; sent again, a line already run is not "
            "run twice",
        ),
    ] = None,
    held: Annotated[
        str | None,
        Query(
            pattern=HELD_PATTERN,
            description="what the client holds: an answer's version, start (the creation's "
            "answer) or none. The answer then has a version, and the stores equal to those "
            "held are left out and named in unchanged (a version no longer kept: the whole "
            "Session). Without held: the whole Session, no version",
        ),
    ] = None,
) -> SessionCall:
    state = request.app.state
    return SessionCall(state.sessions, session_id, state.pool, since, moment, held)


Target = Annotated[SessionTarget, Depends(session_target)]
Call = Annotated[SessionCall, Depends(session_call)]


async def get_hub(request: Request) -> LectureHub:
    hub: LectureHub = request.app.state.hub
    return hub


Hub = Annotated[LectureHub, Depends(get_hub)]


NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such lecture (or it ended)"},
}
QUIZ_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    409: {"model": Problem, "description": "no lecture, or no question, on this session"},
}


def lecture_of(hub: LectureHub, session_id: str) -> Lecture:
    lecture = hub.of_session(session_id)
    if lecture is None:
        raise LectureConflict("this session has no lecture: POST …/lecture starts one")
    return lecture
