"""Lectures: a session others follow live under a short join code, its quizzes and polls.

The session id stays the only key that drives a session; the join code only lets people watch.
Every change to a lectured session (a line, a rewind, a PATCH, a reset, a quiz or a poll) becomes
one numbered event, made once under the session's lock and fanned out to every follower on the
event loop. Events carry the Session as followers see it, with only the loss points they do not
have yet. Lectures, their newest events, quizzes, polls and votes live in the database, so
followers resume (``Last-Event-ID``) across a restart. The record and its join code are
``lecture.py``.

Where an event is written and where a lecture this process does not hold is found is the
broadcast's business (``broadcast.py``): this process alone, or several processes sharing a
PostgreSQL database (``relay.py``); the hub never asks which. The quiz and the self-study quiz:
``quizzes.py``; the class's polls, held as ``hub.polls``: ``polls.py``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from app.db import Database, StorageFull, StoredLecture
from app.engine.program import preset_of
from app.engine.views import SessionView
from app.lectures.broadcast import Alone, Broadcast, Lectures
from app.lectures.fanout import END, KEEPALIVE, frame, newer, on_loop, release
from app.lectures.lecture import RECENT, Lecture, NoLecture, new_code, normal
from app.lectures.poll import Poll
from app.lectures.polls import Polls, not_polling
from app.lectures.quizzes import BUG_PROMPT, Ballot, LectureConflict, Quiz, SelfStudy, hide
from app.log.records import Change
from app.log.timeline import Timeline
from app.sessions.live import LiveSession

LOG = logging.getLogger("loop_stepper.lectures")


class LectureHub:
    """Every running lecture, by code and by session; the fan-out to followers."""

    def __init__(
        self,
        db: Database,
        hours: float = 4.0,
        *,
        keepalive: float = 15.0,
        clock: Callable[[], float] = time.time,
        broadcast: Callable[[Lectures, Database], Broadcast] = Alone,
    ) -> None:
        self.db = db
        self.life = hours * 3600
        self.keepalive = keepalive
        self.clock = clock
        self.by_code: dict[str, Lecture] = {}
        self.by_session: dict[str, Lecture] = {}
        self.study = SelfStudy(db)
        self._lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        side = Lectures(self.by_code, self._known, self.deliver, self.drop, self.study, clock)
        self.broadcast = broadcast(side, db)
        self.polls = Polls(db, self.broadcast, self.publish)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Events go out on ``loop``; the broadcast starts (the running lectures)."""
        self.loop = loop
        self.broadcast.attach(loop)

    def _known(self, stored: StoredLecture) -> Lecture:
        """A lecture read back from the database, held here from now on (the first one found is
        kept when two threads find it at once)."""
        return self._add(self._lecture(stored))

    def _lecture(self, stored: StoredLecture) -> Lecture:
        poll = None
        if stored.poll is not None and stored.poll["kind"] != "bug":  # with its votes so far
            votes = self.db.poll_votes(stored.code, stored.poll["n"])
            poll = Poll.stored(stored.poll, votes)
        events = self.db.lecture_events(stored.code, stored.seq - RECENT)
        return Lecture(
            stored.code,
            stored.session,
            stored.seq,
            stored.losses,
            stored.expires,
            quiz=Quiz.from_json(stored.quiz) if stored.quiz else None,
            ballot=Ballot(dict(stored.votes)),
            poll=poll,
            recent=deque(((seq, body.encode()) for seq, body in events), maxlen=RECENT),
            delivered=stored.seq,
        )

    def _add(self, lecture: Lecture) -> Lecture:
        with self._lock:  # two threads finding one lecture: the first one found is kept
            lecture = self.by_code.setdefault(lecture.code, lecture)
            self.by_session[lecture.session_id] = lecture
        return lecture

    def adopt(self, session_id: str) -> None:
        """A session this process just read from the database (several processes: it may have
        moved here): its lecture and its self-study quiz as the database has them now."""
        self.broadcast.adopt(session_id)

    # -- the instructor --------------------------------------------------------------

    def start(self, session_id: str, timeline: Timeline) -> Lecture:
        """The session's lecture: the running one, or a new one under a fresh code (under
        the session's lock)."""
        lecture = self.of_session(session_id)
        if lecture is not None:
            return lecture
        code = new_code()
        while code in self.by_code:
            code = new_code()
        expires = self.clock() + self.life
        self.db.add_lecture(code, session_id, expires)
        lecture = self._add(Lecture(code, session_id, 0, 0, expires))
        self.broadcast.started(lecture, lambda: self.whole(lecture, timeline))
        return lecture

    def end(self, session_id: str) -> None:
        lecture = self.of_session(session_id)
        if lecture is None:
            raise NoLecture(session_id)
        self._end(lecture)

    def _end(self, lecture: Lecture) -> None:
        self.drop(lecture)
        self.db.end_lecture(lecture.code)
        self.broadcast.ended(lecture)

    def drop(self, lecture: Lecture) -> None:
        """Forget an ended lecture; its followers get ``end``."""
        with self._lock:
            if self.by_code.get(lecture.code) is lecture:
                del self.by_code[lecture.code]
            if self.by_session.get(lecture.session_id) is lecture:
                del self.by_session[lecture.session_id]
        lecture.ended = True
        self._wake(lecture)

    def of_session(self, session_id: str) -> Lecture | None:
        lecture = self.by_session.get(session_id) or self.broadcast.of_session(session_id)
        if lecture is not None and lecture.expires <= self.clock():
            self._end(lecture)
            return None
        return lecture

    def find(self, code: str) -> Lecture:
        lecture = self.by_code.get(normal(code)) or self.broadcast.find(normal(code))
        if lecture is None:
            raise NoLecture(code)
        if lecture.expires <= self.clock():
            self._end(lecture)
            raise NoLecture(code)
        return lecture

    # -- events ----------------------------------------------------------------------

    def changed(self, session: LiveSession, change: Change) -> None:
        """The live sessions' hook: a change was saved, under the session's lock. A line run
        while the class predicts it reveals the poll in the same event."""
        lecture = self.by_session.get(session.id)
        if lecture is None or lecture.ended:
            return
        # the line is saved: a full disk costs the class this event's copy in the db (the
        # followers of other processes catch up at the next one), never the line's answer
        try:
            if lecture.polling:
                self.polls.settle(lecture, change)
        except StorageFull as error:
            LOG.warning("lecture %s: the poll was not settled in the db: %s", lecture.code, error)
        try:
            self.publish(lecture, session.timeline)
        except StorageFull as error:
            LOG.warning(
                "lecture %s: event %d not kept in the db: %s", lecture.code, lecture.seq, error
            )

    def view(self, lecture: Lecture, timeline: Timeline, since: int = 0) -> SessionView:
        """The Session as followers see it: no id, and during a quiz no program."""
        data = timeline.view(since)
        if lecture.hidden:
            hide(data)
        data["quiz"] = lecture.quiz.public() if lecture.quiz else None
        data["prediction"] = lecture.poll.public() if lecture.poll else None
        return data

    def whole(self, lecture: Lecture, timeline: Timeline) -> bytes:
        """The whole Session as one event numbered like the newest."""
        return frame(lecture.seq, {"since": 0, "session": self.view(lecture, timeline)})

    def publish(self, lecture: Lecture, timeline: Timeline) -> None:
        """One event after a change; call under the session's lock (it numbers the events)."""
        losses = timeline.lab.losses
        since = min(lecture.losses, losses)  # a rewind or reset takes points back
        payload = {"since": since, "session": self.view(lecture, timeline, since)}
        lecture.seq += 1
        lecture.losses = losses
        body = frame(lecture.seq, payload)
        if self.loop is not None:  # this process's followers first: they need no database
            self.loop.call_soon_threadsafe(self.deliver, lecture, lecture.seq, body)
        self.broadcast.publish(lecture, body, lambda: self.whole(lecture, timeline))

    def sync(self, lecture: Lecture, timeline: Timeline) -> tuple[int, bytes]:
        """The whole Session as one event numbered like the newest (under the session's
        lock): for a follower that has nothing, or is too far behind to catch up."""
        return lecture.seq, self.whole(lecture, timeline)

    def deliver(self, lecture: Lecture, seq: int, body: bytes) -> None:
        """On the loop, a turn after the event was made: a line answered on the loop has gone
        out by now; the followers wake a turn later still, so a ``run`` answered from a worker
        thread (its task resumes on this turn) goes out before them too."""
        if seq <= lecture.delivered:
            return
        lecture.recent.append((seq, body))
        lecture.delivered = seq
        if self.loop is not None:
            self.loop.call_soon(self._release, lecture)

    def _wake(self, lecture: Lecture) -> None:
        if self.loop is None:
            return
        if on_loop(self.loop):
            self._release(lecture)
        else:
            self.loop.call_soon_threadsafe(self._release, lecture)

    def _release(self, lecture: Lecture) -> None:
        """Wake every follower waiting on the lecture (on the loop), a slice per turn."""
        waiters, lecture.waiters = lecture.waiters, []
        if self.loop is not None:
            release(self.loop, waiters)

    def _arm(self, lecture: Lecture) -> None:
        """Keep-alive: one timer a lecture (not one a follower), while anyone follows."""
        if lecture.ticker is None and self.loop is not None and not lecture.ended:
            lecture.ticker = self.loop.call_later(self.keepalive, self._tick, lecture)

    def _tick(self, lecture: Lecture) -> None:
        lecture.ticker = None
        if lecture.ended:
            return
        if lecture.expires <= self.clock():
            self._end(lecture)
            return
        lecture.beats += 1
        self._release(lecture)
        if lecture.followers:
            self._arm(lecture)

    async def follow(
        self,
        lecture: Lecture,
        last: int | None,
        full: Callable[[], Awaitable[tuple[int, bytes]]],
        changes: bool = False,
    ) -> AsyncIterator[bytes]:
        """A follower's stream: what it missed since ``last`` (or the whole Session), then
        every event as it comes, keep-alive comments between; ends with the lecture. With
        ``changes``, each event after the first leaves out what the one before had
        (``changed.py``)."""
        lecture.followers += 1
        self._arm(lecture)
        self.broadcast.counted(lecture)
        try:
            async for chunk in self._follow(lecture, last, full, changes):
                yield chunk
        except KeyError:  # the session itself was deleted: so is its lecture
            self._end(lecture)
            yield END
        finally:
            lecture.followers -= 1
            self.broadcast.counted(lecture)

    async def _follow(
        self,
        lecture: Lecture,
        last: int | None,
        full: Callable[[], Awaitable[tuple[int, bytes]]],
        changes: bool,
    ) -> AsyncIterator[bytes]:
        oldest = lecture.recent[0][0] if lecture.recent else lecture.delivered + 1
        if last is None or not (oldest - 1 <= last <= lecture.delivered):
            last, body = await full()
            if changes:
                lecture.changes.saw(last, body)
            yield body
        loop = asyncio.get_running_loop()
        while not lecture.ended:
            fresh = newer(lecture.recent, last)
            if fresh and fresh[0][0] != last + 1:  # fell behind the kept events
                last, body = await full()
                if changes:
                    lecture.changes.saw(last, body)
                yield body
                continue
            if fresh:  # one write, however many events it was behind
                last = fresh[-1][0]
                if changes:
                    fresh = [(n, lecture.changes.of(lecture.recent, n, b)) for n, b in fresh]
                yield fresh[0][1] if len(fresh) == 1 else b"".join(b for _, b in fresh)
                continue
            beats = lecture.beats
            waiter = loop.create_future()
            lecture.waiters.append(waiter)
            await waiter
            if lecture.beats != beats and lecture.delivered == last and not lecture.ended:
                yield KEEPALIVE
        yield END

    # -- the "which bug" quiz ----------------------------------------------------------

    def ask_quiz(self, lecture: Lecture, choices: list[str], timeline: Timeline) -> None:
        """A new quiz (under the session's lock): followers lose sight of the program."""
        not_polling(lecture)
        code = lecture.code
        if lecture.hidden:  # replaced before its reveal: its votes go to the report as they are
            self.db.quiz_closed(code, None)
        lecture.quiz = Quiz(list(dict.fromkeys(choices)))
        lecture.ballot.clear()
        self.db.lecture_quiz(code, lecture.quiz.to_json())
        body = {"prompt": BUG_PROMPT, "choices": lecture.quiz.choices, "answer": None}
        self.db.poll_ask(code, lecture.session_id, timeline.moment, "", "bug", body)
        lecture.poll = None  # the newest poll or quiz is this one
        self.publish(lecture, timeline)

    def reveal_quiz(self, lecture: Lecture, timeline: Timeline) -> None:
        if lecture.quiz is None:
            raise LectureConflict("no question has been asked in this lecture")
        lecture.quiz.revealed = True
        lecture.quiz.truth = preset_of(list(timeline.lab.program))
        self.db.lecture_quiz(lecture.code, lecture.quiz.to_json())
        self.db.quiz_closed(lecture.code, lecture.quiz.truth)
        self.publish(lecture, timeline)

    def vote(self, lecture: Lecture, choice: str, voter: str | None) -> str:
        """A follower's vote in the quiz; returns the voter id."""
        voter = lecture.ballot.admit(lecture.quiz, choice, voter)
        self.db.lecture_vote(lecture.code, voter, choice)
        return voter

    def tally(self, lecture: Lecture) -> dict[str, Any]:
        """The quiz's live tally; with several processes, every process's votes and followers
        (it may read the database: call it off the event loop)."""
        return self.broadcast.tally(lecture)
