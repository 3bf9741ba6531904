"""A lecture as this process holds it, and its join code.

The record (``Lecture``) is its newest event's number, its quiz (with this process's votes) and
its poll, and on the event loop the newest events and the followers waiting for the next one;
what is done with it is the hub's (``hub.py``). A join code only lets people watch: the session
id stays the only key that drives a session.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from app.lectures.changed import Changes
from app.lectures.poll import Poll
from app.lectures.quizzes import Ballot, Quiz

# 32 symbols without 0/O/1/I: a code read off a projector is typed right; 7 of them are 35 bits
ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
CODE_LENGTH = 7
RECENT = 100  # events a lecture keeps in memory for followers that reconnect


class NoLecture(KeyError):
    """No such join code, or the lecture ended (a 404)."""


@dataclass
class Lecture:
    code: str
    session_id: str
    seq: int  # the newest event's number (changed under the session's lock)
    losses: int  # the session's loss count in that event
    expires: float
    quiz: Quiz | None = None
    ballot: Ballot = field(default_factory=Ballot)
    poll: Poll | None = None  # the class predicts the next line (issue 18; app/lectures/poll.py)
    followers: int = 0  # connected to this process
    # on the event loop only: the newest events, the followers waiting for the next one, the
    # keep-alive timer and how many times it has fired
    recent: deque[tuple[int, bytes]] = field(default_factory=lambda: deque(maxlen=RECENT))
    delivered: int = 0
    waiters: list[asyncio.Future[None]] = field(default_factory=list)
    ticker: asyncio.TimerHandle | None = None
    beats: int = 0
    ended: bool = False
    full: tuple[int, bytes] | None = None  # several processes: the newest whole view, as sent
    changes: Changes = field(default_factory=Changes)  # the events as changes (``?changes=1``)

    @property
    def hidden(self) -> bool:
        """A quiz is open: followers see no program until its reveal."""
        return self.quiz is not None and not self.quiz.revealed

    @property
    def polling(self) -> bool:
        """The class is predicting the next line: its poll is open."""
        return self.poll is not None and self.poll.open

    def tally(self, counts: dict[str, int] | None = None, followers: int = 0) -> dict[str, Any]:
        """The quiz's tally: ``counts`` from the database when votes come to several
        processes, else this process's ballot; ``followers`` on other processes added."""
        choices = self.quiz.choices if self.quiz else []
        if counts is None:
            counts = self.ballot.counts(choices)
        counts = {c: counts.get(c, 0) for c in choices}
        quiz = self.quiz.public() if self.quiz else None
        return {
            "choices": counts,
            "answers": sum(counts.values()) if choices else 0,
            "followers": self.followers + followers,
            "revealed": bool(quiz and quiz["revealed"]),
            "answer": quiz and quiz["answer"],
            "explanation": quiz and quiz["explanation"],
        }


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normal(code: str) -> str:
    """A typed code as stored: upper case, no spaces or dashes."""
    return code.strip().upper().replace("-", "").replace(" ", "")
