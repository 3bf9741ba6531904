"""Quizzes: a lecture's "which bug is this?" quiz and its ballot (one vote per voter, bounded),
and the self-study quiz (a private session running a random bug preset, its program hidden until
its owner votes)."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from app.engine.program import PRESETS, Preset
from app.engine.views import QuizRecord, QuizView, SessionView

HIDDEN: tuple[Literal["program", "code", "preset", "toggles"], ...] = (
    "program",
    "code",
    "preset",
    "toggles",
)  # what an open quiz hides from followers
MAX_VOTERS = 1000  # votes one quiz or poll round takes (one per voter): a flood stops here
BURST, REFILL = 5.0, 1.0  # a voter may vote 5 times at once, then once a second
BUG_PROMPT = "Which bug is this?"  # the lecture's quiz, as the report shows it
# the bugs any session shows as it is (not those that need a scheduler, Adam, softmax...)
BUGS = [p for p in PRESETS if p.name != "correct" and not p.setup]
EXPLANATIONS = {p.name: p.explanation for p in PRESETS}


class LectureConflict(Exception):
    """Not now: no quiz or poll open, or fork during one (a 409)."""


class TooManyVotes(Exception):
    """The quiz's (or poll round's) voters are full, or this voter votes too fast (a 429)."""


def self_study_preset() -> Preset:
    """The bug a self-study quiz runs: any but the correct loop."""
    return secrets.choice(BUGS)


def hide(data: SessionView) -> SessionView:
    for key in HIDDEN:
        data.pop(key, None)
    return data


@dataclass
class Quiz:
    choices: list[str]
    revealed: bool = False
    truth: str | None = None  # the session's preset, once revealed

    @classmethod
    def from_json(cls, data: QuizRecord) -> Quiz:
        return cls(data["choices"], data["revealed"], data["answer"])

    def to_json(self) -> QuizRecord:
        """As stored and sent: the truth is the JSON's ``answer``."""
        return {"choices": self.choices, "revealed": self.revealed, "answer": self.truth}

    def public(self) -> QuizView:
        """What followers see: the truth and its explanation only once revealed."""
        explanation = EXPLANATIONS.get(self.truth or "") if self.revealed else None
        return {**self.to_json(), "explanation": explanation}


@dataclass
class Ballot:
    """A quiz's (or a poll round's) votes on this process, one per voter, and each voter's
    token bucket."""

    votes: dict[str, str] = field(default_factory=dict)
    buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # voter: tokens, when

    def clear(self) -> None:
        self.votes.clear()
        self.buckets.clear()

    def admit(self, quiz: Quiz | None, choice: str, voter: str | None) -> str:
        """Record one vote (again: it replaces the voter's last); returns the voter id."""
        if quiz is None or quiz.revealed:
            raise LectureConflict("no question is open in this lecture right now")
        if choice not in quiz.choices:
            raise ValueError(f"choice must be one of {quiz.choices}")
        return self.cast(choice, voter)

    def cast(self, choice: str, voter: str | None) -> str:
        """A vote already checked against its quiz or poll, within the flood limits."""
        voter = voter or secrets.token_urlsafe(12)
        if voter not in self.votes and len(self.votes) >= MAX_VOTERS:
            raise TooManyVotes(f"this question already has {MAX_VOTERS} voters")
        now = time.monotonic()
        tokens, then = self.buckets.get(voter, (BURST, now))
        tokens = min(BURST, tokens + (now - then) * REFILL)
        if tokens < 1:
            raise TooManyVotes("answering too fast: one answer a second")
        self.buckets[voter] = (tokens - 1, now)
        self.votes[voter] = choice
        return voter

    def counts(self, choices: list[str]) -> dict[str, int]:
        counts = dict.fromkeys(choices, 0)
        for choice in self.votes.values():
            if choice in counts:
                counts[choice] += 1
        return counts


class SelfStudyDatabase(Protocol):
    def self_quiz(self, session_id: str, preset: str, revealed: bool = False) -> None: ...
    def self_quizzes(self) -> dict[str, tuple[str, bool]]: ...


class SelfStudy:
    """Self-study quizzes by session id: the preset each runs, and whether its owner voted."""

    def __init__(self, db: SelfStudyDatabase) -> None:
        self.db = db
        self.quizzes: dict[str, tuple[str, bool]] = {}  # session id: preset, revealed

    def load(self) -> None:
        self.quizzes = self.db.self_quizzes()

    def start(self, session_id: str, preset: str) -> None:
        self.db.self_quiz(session_id, preset)
        self.quizzes[session_id] = (preset, False)

    def vote(self, session_id: str, choice: str) -> dict[str, Any]:
        """The owner's vote: it reveals the program."""
        if session_id not in self.quizzes:
            raise LectureConflict("this session has no question: create one with quiz: true")
        preset, _ = self.quizzes[session_id]
        self.db.self_quiz(session_id, preset, revealed=True)
        self.quizzes[session_id] = (preset, True)
        return {"correct": choice == preset, "preset": preset, "explanation": EXPLANATIONS[preset]}

    def shown(self, session_id: str, data: SessionView) -> SessionView:
        """A Session as its owner sees it: a self-study quiz hides its program."""
        quiz = self.quizzes.get(session_id)
        if quiz is None:
            data["quiz"] = None
            return data
        if not quiz[1]:
            hide(data)
        data["quiz"] = {
            "choices": [p.name for p in PRESETS],
            "revealed": quiz[1],
            "answer": quiz[0] if quiz[1] else None,
            "explanation": EXPLANATIONS[quiz[0]] if quiz[1] else None,
        }
        return data
