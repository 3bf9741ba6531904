"""Lectures across processes (issue 12): what ``lectures/relay.py`` reads and writes when several
processes share one database. Mixed into the PostgreSQL database (the same SQL would run on SQLite,
which has no other process to tell).

- ``lecture_publish``: one transaction holds a lecture's event, its number, the whole view a
  follower that has nothing starts from (``lecture_views``, one row a lecture) and the NOTIFY
  that tells the other processes (PostgreSQL delivers it at commit, so a listener that reads
  the event finds it);
- a lecture looked up by its code or its session, the tally counted from the answers of every
  process, a session's self-study question.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from app.db.lectures import LectureTables, StoredLecture
from app.db.sql import Cursor


class SharedListener(Protocol):
    on_reconnect: Callable[[], None] | None

    def close(self) -> None: ...


class Shared(Protocol):
    """What ``Relay`` needs of a database several processes share (``Store.shared()``)."""

    def lecture(self, code: str) -> StoredLecture | None: ...
    def lecture_of(self, session_id: str) -> StoredLecture | None: ...
    def lecture_events(self, code: str, after: int) -> list[tuple[int, str]]: ...
    def lecture_publish(
        self, code: str, seq: int, losses: int, body: str, full: str, notice: tuple[str, str]
    ) -> None: ...
    def lecture_full(self, code: str) -> tuple[int, str] | None: ...
    def lecture_set_full(self, code: str, seq: int, full: str) -> None: ...
    def lecture_counts(self, code: str) -> dict[str, int]: ...
    def poll_of(self, code: str) -> dict[str, Any] | None: ...
    def poll_counts(self, code: str, n: int) -> list[dict[str, int]]: ...
    def self_quiz_of(self, session_id: str) -> tuple[str, bool] | None: ...
    def notify(self, channel: str, payload: str) -> None: ...
    def listen(self, channel: str, callback: Callable[[str], None]) -> SharedListener: ...


COLUMNS = "code, session, seq, losses, expires, quiz"


def _lecture(row: tuple[str, str, int, int, float, str | None] | None) -> StoredLecture | None:
    if row is None:
        return None
    code, session, seq, losses, expires, quiz = row
    stored_quiz = None if quiz is None else json.loads(quiz)
    return StoredLecture(code, session, int(seq), int(losses), expires, stored_quiz, {})


class SharedLectures(LectureTables):
    def end_lecture(self, code: str) -> None:
        super().end_lecture(code)
        with self._tx() as db:
            db.execute("DELETE FROM lecture_views WHERE code = ?", (code,))

    def lecture(self, code: str) -> StoredLecture | None:
        """A running lecture by its code (without its votes: ``lecture_counts``)."""
        with self._read() as db:
            row = db.execute(f"SELECT {COLUMNS} FROM lectures WHERE code = ?", (code,)).fetchone()
        return self._with_poll(_lecture(row))

    def _with_poll(self, stored: StoredLecture | None) -> StoredLecture | None:
        if stored is not None:
            stored.poll = self.poll_of(stored.code)
        return stored

    def lecture_of(self, session_id: str) -> StoredLecture | None:
        with self._read() as db:
            row = db.execute(
                f"SELECT {COLUMNS} FROM lectures WHERE session = ?", (session_id,)
            ).fetchone()
        return self._with_poll(_lecture(row))

    def lecture_publish(
        self, code: str, seq: int, losses: int, body: str, full: str, notice: tuple[str, str]
    ) -> None:
        """The event ``seq``, the whole view after it, and the notice, all or nothing."""
        with self._tx() as db:
            self._write_event(db, code, seq, losses, body)
            self._set_full(db, code, seq, full)
            db.execute("SELECT pg_notify(?, ?)", notice)

    def lecture_set_full(self, code: str, seq: int, full: str) -> None:
        with self._tx() as db:
            self._set_full(db, code, seq, full)

    @staticmethod
    def _set_full(db: Cursor, code: str, seq: int, full: str) -> None:
        db.execute(
            "INSERT INTO lecture_views VALUES (?, ?, ?) "
            "ON CONFLICT (code) DO UPDATE SET seq = excluded.seq, body = excluded.body",
            (code, seq, full),
        )

    def lecture_full(self, code: str) -> tuple[int, str] | None:
        """The whole view at the newest event, as its process stored it (None: ended)."""
        with self._read() as db:
            row = db.execute(
                "SELECT v.seq, v.body FROM lecture_views v JOIN lectures l ON l.code = v.code "
                "WHERE v.code = ?",
                (code,),
            ).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def lecture_counts(self, code: str) -> dict[str, int]:
        """Every process's votes in the lecture's quiz, by choice."""
        with self._read() as db:
            rows = db.execute(
                "SELECT choice, count(*) FROM lecture_answers WHERE code = ? GROUP BY choice",
                (code,),
            ).fetchall()
        return {choice: int(n) for choice, n in rows}

    def self_quiz_of(self, session_id: str) -> tuple[str, bool] | None:
        with self._read() as db:
            row = db.execute(
                "SELECT preset, revealed FROM self_quizzes WHERE session = ?", (session_id,)
            ).fetchone()
        return None if row is None else (row[0], bool(row[1]))
