"""Prepared lessons (issue 29): the documents users wrote (``lessons``, migration 10) under an
unguessable id, with the SHA-256 of their edit token (never the token), and each student's
answer to a lesson's custom question (``lesson_answers``: by session and stop, the last one
counts). The same SQL on both dialects, mixed into both databases; the built-in lessons are
files (``app/lessons/builtin/``), never rows.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager

from app.db.sql import Cursor


class LessonTables:
    clock: Callable[[], float]

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Cursor]: ...

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]: ...

    def save_lesson(self, lesson_id: str, body: str, edit_hash: str) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO lessons (id, body, edit_hash, created) VALUES (?, ?, ?, ?)",
                (lesson_id, body, edit_hash, self.clock()),
            )

    def lesson(self, lesson_id: str) -> tuple[str, str] | None:
        """The document and its edit token's hash, or None if no such lesson."""
        with self._read() as db:
            row = db.execute(
                "SELECT body, edit_hash FROM lessons WHERE id = ?", (lesson_id,)
            ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def update_lesson(self, lesson_id: str, body: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE lessons SET body = ? WHERE id = ?", (body, lesson_id))

    def delete_lesson(self, lesson_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM lessons WHERE id = ?", (lesson_id,))

    def save_lesson_answer(self, session: str, stop: int, choices: str, correct: bool) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO lesson_answers (session, stop, choices, correct) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session, stop) DO UPDATE SET choices = excluded.choices, "
                "correct = excluded.correct",
                (session, stop, choices, int(correct)),
            )

    def lesson_answers(self, session: str) -> dict[int, bool]:
        """Each answered stop's index and whether its last answer was right."""
        with self._read() as db:
            rows = db.execute(
                "SELECT stop, correct FROM lesson_answers WHERE session = ?", (session,)
            ).fetchall()
        return {int(stop): bool(correct) for stop, correct in rows}
