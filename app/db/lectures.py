"""The lecture tables (issue 11): running lectures, their newest events, quizzes and their
votes, and the self-study quizzes of sessions. The same SQL on both dialects (``LectureTables`` is
mixed into both databases, over their ``_tx``/``_read``)."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from app.db.polls import PollTables
from app.db.sql import Cursor, dumps
from app.engine.views import QuizRecord

EVENTS_KEPT = 200  # a lecture's newest events kept for followers that resume


@dataclass
class StoredLecture:
    code: str
    session: str
    seq: int  # the newest event's number
    losses: int  # the session's loss count in that event (the next one's history starts there)
    expires: float
    quiz: QuizRecord | None
    votes: dict[str, str]  # in its quiz: voter -> choice
    poll: dict[str, Any] | None = None  # the newest poll or quiz put to the class (issue 18)


class LectureTables(PollTables):
    clock: Callable[[], float]

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Cursor]: ...

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]: ...

    def lectures(self, now: float) -> list[StoredLecture]:
        """Every lecture not yet expired, with its quiz and votes."""
        with self._read() as db:
            rows = db.execute(
                "SELECT code, session, seq, losses, expires, quiz FROM lectures WHERE expires > ?",
                (now,),
            ).fetchall()
            cast = db.execute("SELECT code, voter, choice FROM lecture_answers").fetchall()
        votes: dict[str, dict[str, str]] = {}
        for code, voter, choice in cast:
            votes.setdefault(code, {})[voter] = choice
        return [
            StoredLecture(
                *(c, s, q, n, e, None if z is None else json.loads(z), votes.get(c, {})),
                self.poll_of(c),
            )
            for c, s, q, n, e, z in rows
        ]

    def add_lecture(self, code: str, session_id: str, expires: float) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM lectures WHERE expires <= ?", (self.clock(),))
            self._poll_forget(db, session_id)
            db.execute(
                "INSERT INTO lectures (code, session, expires) VALUES (?, ?, ?)",
                (code, session_id, expires),
            )

    def end_lecture(self, code: str) -> None:
        with self._tx() as db:
            for table in ("lectures", "lecture_events", "lecture_answers"):
                db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))
            # its polls and quizzes stay (the report outlives the lecture), closed
            db.execute("UPDATE lecture_questions SET open = 0 WHERE code = ?", (code,))

    def lecture_event(self, code: str, seq: int, losses: int, body: str) -> None:
        """One event, and the lecture's newest number (Last-Event-ID after a restart)."""
        with self._tx() as db:
            self._write_event(db, code, seq, losses, body)

    @staticmethod
    def _write_event(db: Cursor, code: str, seq: int, losses: int, body: str) -> None:
        db.execute("UPDATE lectures SET seq = ?, losses = ? WHERE code = ?", (seq, losses, code))
        db.execute(
            "INSERT INTO lecture_events VALUES (?, ?, ?) "
            "ON CONFLICT (code, seq) DO UPDATE SET body = excluded.body",
            (code, seq, body),
        )
        if seq % 50 == 0:  # now and then, not on every event
            db.execute(
                "DELETE FROM lecture_events WHERE code = ? AND seq <= ?",
                (code, seq - EVENTS_KEPT),
            )

    def lecture_events(self, code: str, after: int) -> list[tuple[int, str]]:
        with self._read() as db:
            rows = db.execute(
                "SELECT seq, body FROM lecture_events WHERE code = ? AND seq > ? ORDER BY seq",
                (code, after),
            ).fetchall()
        return [(int(seq), body) for seq, body in rows]

    def lecture_quiz(self, code: str, quiz: QuizRecord | None) -> None:
        """A new quiz (its votes start over), its reveal, or none."""
        with self._tx() as db:
            db.execute(
                "UPDATE lectures SET quiz = ? WHERE code = ?",
                (None if quiz is None else dumps(quiz), code),
            )
            if quiz is None or not quiz.get("revealed"):
                db.execute("DELETE FROM lecture_answers WHERE code = ?", (code,))

    def lecture_vote(self, code: str, voter: str, choice: str) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO lecture_answers VALUES (?, ?, ?) "
                "ON CONFLICT (code, voter) DO UPDATE SET choice = excluded.choice",
                (code, voter, choice),
            )

    def self_quiz(self, session_id: str, preset: str, revealed: bool = False) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO self_quizzes VALUES (?, ?, ?) ON CONFLICT (session) "
                "DO UPDATE SET preset = excluded.preset, revealed = excluded.revealed",
                (session_id, preset, int(revealed)),
            )

    def self_quizzes(self) -> dict[str, tuple[str, bool]]:
        """The self-study quizzes of sessions still in the database."""
        with self._read() as db:
            rows = db.execute(
                "SELECT session, preset, revealed FROM self_quizzes "
                "WHERE session IN (SELECT id FROM logs)"
            ).fetchall()
        return {s: (p, bool(r)) for s, p, r in rows}
