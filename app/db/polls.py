"""What is put to a lecture's class (issue 18) and its votes: the poll about the instructor's
next line (round 1, and round 2 after the class discussed) and the "which bug" quiz (kind
``bug``, its votes copied here when it closes). The report is read from these. The same SQL on
both dialects (mixed into ``LectureTables``); the tables keep their first names
(``lecture_questions``, ``lecture_votes``).

A poll or quiz is numbered within its lecture (``n``); it keeps the session it was asked on, so
its report outlives the lecture (a new lecture on the session starts a new report). A vote is
taken only while its poll is open in that round, checked by the INSERT itself: a process that
has not heard of the reveal yet cannot count a late vote.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import Any

from app.db.sql import Cursor, dumps

COLUMNS = "n, moment, line, kind, round, open, body"


def _poll(row: tuple[Any, ...] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    n, moment, line, kind, rnd, is_open, body = row
    return {
        "n": int(n),
        "moment": int(moment),
        "line": line,
        "kind": kind,
        "round": int(rnd),
        "open": bool(is_open),
        "body": json.loads(body),
    }


class PollTables:
    @abstractmethod
    def _tx(self) -> AbstractContextManager[Cursor]: ...

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]: ...

    @staticmethod
    def _poll_forget(db: Cursor, session_id: str) -> None:
        """A new lecture on the session: its old report goes, and those of sessions gone."""
        gone = "(session = ? OR session NOT IN (SELECT id FROM logs))"
        db.execute(
            f"DELETE FROM lecture_votes WHERE code IN "
            f"(SELECT code FROM lecture_questions WHERE {gone})",
            (session_id,),
        )
        db.execute(f"DELETE FROM lecture_questions WHERE {gone}", (session_id,))

    def poll_ask(
        self,
        code: str,
        session_id: str,
        moment: int,
        line: str,
        kind: str,
        body: dict[str, Any],
    ) -> int:
        """A new poll or quiz (any still open closes); its number in the lecture."""
        with self._tx() as db:
            db.execute("UPDATE lecture_questions SET open = 0 WHERE code = ? AND open = 1", (code,))
            row = db.execute(
                "SELECT coalesce(max(n), 0) FROM lecture_questions WHERE code = ?", (code,)
            ).fetchone()
            n = int(row[0]) + 1
            db.execute(
                "INSERT INTO lecture_questions (code, n, session, moment, line, kind, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (code, n, session_id, moment, line, kind, dumps(body)),
            )
        return n

    def poll_update(self, code: str, n: int, rnd: int, is_open: bool, body: dict[str, Any]) -> None:
        """A new round, the reveal, or a poll withdrawn."""
        with self._tx() as db:
            db.execute(
                "UPDATE lecture_questions SET round = ?, open = ?, body = ? "
                "WHERE code = ? AND n = ?",
                (rnd, int(is_open), dumps(body), code, n),
            )

    def poll_vote(self, code: str, n: int, rnd: int, voter: str, choice: str) -> bool:
        """One vote (again: it replaces the voter's); False when that round is not open."""
        with self._tx() as db:
            taken = db.execute(
                "INSERT INTO lecture_votes (code, n, round, voter, choice) "
                "SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM lecture_questions "
                "WHERE code = ? AND n = ? AND round = ? AND open = 1) "
                "ON CONFLICT (code, n, round, voter) DO UPDATE SET choice = excluded.choice",
                (code, n, rnd, voter, choice, code, n, rnd),
            ).rowcount
        return taken > 0

    def poll_counts(self, code: str, n: int) -> list[dict[str, int]]:
        """Every process's votes in poll ``n``: per round, how many cast each vote."""
        with self._read() as db:
            rows = db.execute(
                "SELECT round, choice, count(*) FROM lecture_votes WHERE code = ? AND n = ? "
                "GROUP BY round, choice",
                (code, n),
            ).fetchall()
        return _rounds(rows)

    def poll_votes(self, code: str, n: int) -> list[dict[str, str]]:
        """Poll ``n``'s votes, per round: voter -> vote (a restart's ballots)."""
        with self._read() as db:
            rows = db.execute(
                "SELECT round, voter, choice FROM lecture_votes WHERE code = ? AND n = ?",
                (code, n),
            ).fetchall()
        votes: list[dict[str, str]] = []
        for rnd, voter, choice in rows:
            while len(votes) < int(rnd):
                votes.append({})
            votes[int(rnd) - 1][voter] = choice
        return votes

    def poll_of(self, code: str) -> dict[str, Any] | None:
        """The lecture's newest poll or quiz (None: none asked yet)."""
        with self._read() as db:
            row = db.execute(
                f"SELECT {COLUMNS} FROM lecture_questions WHERE code = ? ORDER BY n DESC LIMIT 1",
                (code,),
            ).fetchone()
        return _poll(row)

    def quiz_closed(self, code: str, truth: str | None) -> None:
        """The open "which bug" quiz closes: its votes (every process's) are kept with it, and
        its truth, the true preset, when it was revealed (None: replaced before its reveal)."""
        with self._tx() as db:
            row = db.execute(
                "SELECT n, body FROM lecture_questions WHERE code = ? AND kind = 'bug' "
                "AND open = 1 ORDER BY n DESC LIMIT 1",
                (code,),
            ).fetchone()
            if row is None:
                return
            n, body = int(row[0]), json.loads(row[1])
            db.execute(
                "INSERT INTO lecture_votes (code, n, round, voter, choice) "
                "SELECT code, ?, 1, voter, choice FROM lecture_answers WHERE code = ? "
                "ON CONFLICT (code, n, round, voter) DO UPDATE SET choice = excluded.choice",
                (n, code),
            )
            db.execute(
                "UPDATE lecture_questions SET open = 0, body = ? WHERE code = ? AND n = ?",
                (dumps({**body, "answer": truth}), code, n),
            )

    def poll_report(self, session_id: str) -> list[dict[str, Any]]:
        """Every poll and quiz asked in the session's (newest) lecture, in order, with each
        round's counts by vote."""
        with self._read() as db:
            rows = db.execute(
                f"SELECT code, {COLUMNS} FROM lecture_questions WHERE session = ? ORDER BY code, n",
                (session_id,),
            ).fetchall()
            votes = db.execute(
                "SELECT v.code, v.n, v.round, v.choice, count(*) FROM lecture_votes v "
                "JOIN lecture_questions q ON q.code = v.code AND q.n = v.n "
                "WHERE q.session = ? GROUP BY v.code, v.n, v.round, v.choice",
                (session_id,),
            ).fetchall()
        counts: dict[tuple[str, int], list[tuple[int, str, int]]] = {}
        for code, n, rnd, choice, count in votes:
            counts.setdefault((code, int(n)), []).append((rnd, choice, count))
        polls = []
        for code, *rest in rows:
            poll = _poll(tuple(rest))
            assert poll is not None
            poll["rounds"] = _rounds(counts.get((code, poll["n"]), []))
            polls.append(poll)
        return polls


def _rounds(rows: list[Any]) -> list[dict[str, int]]:
    rounds: list[dict[str, int]] = []
    for rnd, choice, count in rows:
        while len(rounds) < int(rnd):
            rounds.append({})
        rounds[int(rnd) - 1][choice] = int(count)
    return rounds
