"""Questions: a lecture's question and its ballot (one answer per voter, bounded), and the
self-study question (a private session running a random bug preset, its program hidden until
its owner answers)."""

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
)  # what a question hides from followers
MAX_VOTERS = 1000  # answers one question takes (one per voter): a flood of new voters stops here
BURST, REFILL = 5.0, 1.0  # a voter may answer 5 times at once, then once a second
# the bugs any session shows as it is (not those that need a scheduler, Adam, softmax...)
BUGS = [p for p in PRESETS if p.name != "correct" and not p.setup]
EXPLANATIONS = {p.name: p.explanation for p in PRESETS}


class LectureConflict(Exception):
    """Not now: no question running, or fork during one (a 409)."""


class TooManyAnswers(Exception):
    """The question's voters are full, or this voter answers too fast (a 429)."""


def self_study_preset() -> Preset:
    """The bug a self-study question runs: any but the correct loop."""
    return secrets.choice(BUGS)


def hide(data: SessionView) -> SessionView:
    for key in HIDDEN:
        data.pop(key, None)
    return data


@dataclass
class Quiz:
    choices: list[str]
    revealed: bool = False
    answer: str | None = None  # the session's preset, once revealed

    def to_json(self) -> QuizRecord:
        return {"choices": self.choices, "revealed": self.revealed, "answer": self.answer}

    def public(self) -> QuizView:
        """What followers see: the answer and its explanation only once revealed."""
        explanation = EXPLANATIONS.get(self.answer or "") if self.revealed else None
        return {**self.to_json(), "explanation": explanation}


@dataclass
class Ballot:
    """A question's answers on this process, one per voter, and each voter's token bucket."""

    answers: dict[str, str] = field(default_factory=dict)
    buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # voter: tokens, when

    def clear(self) -> None:
        self.answers.clear()
        self.buckets.clear()

    def admit(self, quiz: Quiz | None, choice: str, voter: str | None) -> str:
        """Record one answer (again: it replaces the voter's last); returns the voter id."""
        if quiz is None or quiz.revealed:
            raise LectureConflict("no question is open in this lecture right now")
        if choice not in quiz.choices:
            raise ValueError(f"choice must be one of {quiz.choices}")
        return self.cast(choice, voter)

    def cast(self, choice: str, voter: str | None) -> str:
        """An answer already checked against its question, within the flood limits."""
        voter = voter or secrets.token_urlsafe(12)
        if voter not in self.answers and len(self.answers) >= MAX_VOTERS:
            raise TooManyAnswers(f"this question already has {MAX_VOTERS} voters")
        now = time.monotonic()
        tokens, then = self.buckets.get(voter, (BURST, now))
        tokens = min(BURST, tokens + (now - then) * REFILL)
        if tokens < 1:
            raise TooManyAnswers("answering too fast: one answer a second")
        self.buckets[voter] = (tokens - 1, now)
        self.answers[voter] = choice
        return voter

    def counts(self, choices: list[str]) -> dict[str, int]:
        counts = dict.fromkeys(choices, 0)
        for choice in self.answers.values():
            if choice in counts:
                counts[choice] += 1
        return counts


class SelfStudyDatabase(Protocol):
    def self_quiz(self, session_id: str, preset: str, revealed: bool = False) -> None: ...
    def self_quizzes(self) -> dict[str, tuple[str, bool]]: ...


class SelfStudy:
    """Self-study questions by session id: the preset each runs, and whether it was answered."""

    def __init__(self, db: SelfStudyDatabase) -> None:
        self.db = db
        self.quizzes: dict[str, tuple[str, bool]] = {}  # session id: preset, revealed

    def load(self) -> None:
        self.quizzes = self.db.self_quizzes()

    def start(self, session_id: str, preset: str) -> None:
        self.db.self_quiz(session_id, preset)
        self.quizzes[session_id] = (preset, False)

    def answer(self, session_id: str, choice: str) -> dict[str, Any]:
        if session_id not in self.quizzes:
            raise LectureConflict("this session has no question: create one with quiz: true")
        preset, _ = self.quizzes[session_id]
        self.db.self_quiz(session_id, preset, revealed=True)
        self.quizzes[session_id] = (preset, True)
        return {"correct": choice == preset, "preset": preset, "explanation": EXPLANATIONS[preset]}

    def shown(self, session_id: str, data: SessionView) -> SessionView:
        """A Session as its owner sees it: a self-study question hides its program."""
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
