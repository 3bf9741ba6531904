"""The self-study question: a private session running a random bug preset, its program hidden
(in the JSON, not only on the screen) until its owner answers which bug it is.

Also what lectures share with it: what a question hides, the presets' explanations, and the
409 for "no question here now".
"""

from __future__ import annotations

import secrets
from typing import Any

from .engine.program import PRESETS, Preset
from .store import SqliteStore

HIDDEN = ("program", "code", "preset", "toggles")  # what a question hides
# the bugs any session shows as it is (not those that need a scheduler, Adam, softmax...)
BUGS = [p for p in PRESETS if p.name != "correct" and not p.setup]
EXPLANATIONS = {p.name: p.explanation for p in PRESETS}


class LectureConflict(Exception):
    """Not now: no question running, or fork during one (a 409)."""


def self_study_preset() -> Preset:
    """The bug a self-study question runs: any but the correct loop."""
    return secrets.choice(BUGS)


class SelfStudy:
    """Every self-study question, by session id: its preset and whether it was answered."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.quizzes: dict[str, tuple[str, bool]] = {}  # session id: preset, revealed

    def load(self) -> None:
        """Read the questions back from the store (after a restart)."""
        self.quizzes = self.store.self_quizzes()

    def start(self, session_id: str, preset: str) -> None:
        self.store.self_quiz(session_id, preset)
        self.quizzes[session_id] = (preset, False)

    def answer(self, session_id: str, choice: str) -> dict[str, Any]:
        if session_id not in self.quizzes:
            raise LectureConflict("this session has no question: create one with quiz: true")
        preset, _ = self.quizzes[session_id]
        self.store.self_quiz(session_id, preset, revealed=True)
        self.quizzes[session_id] = (preset, True)
        return {"correct": choice == preset, "preset": preset, "explanation": EXPLANATIONS[preset]}

    def shown(self, session_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """A Session as its owner sees it: a self-study question hides its program."""
        quiz = self.quizzes.get(session_id)
        if quiz is None:
            data["quiz"] = None
            return data
        if not quiz[1]:
            for key in HIDDEN:
                data.pop(key, None)
        data["quiz"] = {
            "choices": [p.name for p in PRESETS],
            "revealed": quiz[1],
            "answer": quiz[0] if quiz[1] else None,
            "explanation": EXPLANATIONS[quiz[0]] if quiz[1] else None,
        }
        return data
