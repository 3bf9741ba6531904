"""The class predicts (issue 18): a lecture's polls, held by the hub as ``hub.polls``. A poll is
put to the followers (round 1, and round 2 after they discussed), takes their votes, shows the
instructor the counts and closes with the instructor's next line; the report lists every poll
and quiz of the lecture.

The votes are counted where the broadcast says (this process's ballots, or the database when
several processes share it). A poll changes the Session followers see, so asking one, or a
second round, publishes an event: through the hub's ``publish``, handed to the constructor.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

from app.db import Database
from app.lectures.broadcast import Broadcast
from app.lectures.lecture import Lecture
from app.lectures.poll import Poll, body_of, key_of, refreshed
from app.lectures.quizzes import LectureConflict
from app.log.records import Change
from app.log.timeline import Timeline
from app.predict.predictions import question

REPORT_COLUMNS = [
    "moment",
    "stop",  # a lesson's stop standing at that moment (its index), else empty
    "line",
    "kind",
    "prompt",
    "answer",
    "answered_1",
    "correct_1",
    "answered_2",
    "correct_2",
]
ROUNDS = 2  # vote, discuss, vote again (the CSV has these columns)


def not_polling(lecture: Lecture) -> None:
    """A quiz or a new poll waits while the class predicts the next line (a 409)."""
    if lecture.polling:
        raise LectureConflict("the class is predicting the next line: Next line reveals it")


class Polls:
    """A lecture's polls: ask, vote again, vote, the tally, the reveal, the report."""

    def __init__(
        self,
        db: Database,
        broadcast: Broadcast,
        publish: Callable[[Lecture, Timeline], None],
    ) -> None:
        self.db = db
        self.broadcast = broadcast
        self.publish = publish  # the hub's: one event after a change, under the session's lock

    def ask(self, lecture: Lecture, timeline: Timeline) -> dict[str, Any]:
        """Put the question about the line at the cursor to the class, round 1 (under the
        session's lock; computing its truth replays the session on a scratch copy)."""
        if lecture.hidden:
            raise LectureConflict('a "which bug" question is open: reveal it first')
        not_polling(lecture)
        q = question(timeline, lecture.session_id)
        body = body_of(q)
        n = self.db.poll_ask(
            lecture.code, lecture.session_id, timeline.moment, q.line, q.kind, body
        )
        lecture.poll = Poll(n, timeline.moment, body)
        self.publish(lecture, timeline)
        return self.tally(lecture)

    def again(self, lecture: Lecture, timeline: Timeline) -> dict[str, Any]:
        """Round 2: the class votes again after discussing (round 1's votes are kept)."""
        poll = lecture.poll
        if poll is None or not poll.open:
            raise LectureConflict("no prediction is open: POST …/lecture/question asks one")
        if poll.round >= 2:
            raise LectureConflict("the class has voted twice: Next line reveals the answer")
        poll.round += 1
        poll.grow()
        self.db.poll_update(lecture.code, poll.n, poll.round, True, poll.body)
        self.publish(lecture, timeline)
        return self.tally(lecture)

    def vote(self, lecture: Lecture, choice: str | list[str], voter: str | None) -> str:
        """One vote per voter per round (again: it replaces the last), in the database only
        while that round is open; this process's poll is read again when the database knows
        better (another process asked, moved to round 2 or revealed)."""
        for fresh in (False, True):
            if fresh:
                lecture.poll = refreshed(lecture.poll, self.db.poll_of(lecture.code))
            poll = lecture.poll
            if poll is None or not poll.open:
                continue
            key = poll.key(choice)
            voter = poll.ballot.cast(key, voter)
            if self.db.poll_vote(lecture.code, poll.n, poll.round, voter, key):
                return voter
            poll.ballot.votes.pop(voter, None)
        raise LectureConflict("no prediction is open in this lecture right now")

    def tally(self, lecture: Lecture) -> dict[str, Any]:
        """The instructor's live view of the poll (may read the database: off the loop)."""
        if lecture.poll is None:
            raise LectureConflict("no prediction has been asked: POST …/lecture/question")
        counts, others = self.broadcast.poll_counts(lecture, lecture.poll)
        return lecture.poll.tally(counts, lecture.followers + others)

    def settle(self, lecture: Lecture, change: Change) -> None:
        """A change was saved while the poll is open. A line ran: the poll closes and its
        truth goes out with the line's event. A rewind, a reset or a change of lr or program:
        the poll (about a line in a state that is gone) is withdrawn. Anything else (a
        prediction of the instructor's own) leaves it open."""
        poll = lecture.poll
        assert poll is not None
        ran = any(e.op == "line" for _, e in change.events)
        moved = change.rebased is not None or change.truncate is not None or change.head is not None
        other = any(e.op not in ("line", "predict") for _, e in change.events)
        if ran:
            self.db.poll_update(lecture.code, poll.n, poll.round, False, poll.body)
            counts, _ = self.broadcast.poll_counts(lecture, poll)
            poll.close(counts)
        elif moved or other:
            poll.open = False
            poll.body["withdrawn"] = True
        else:
            return
        self.db.poll_update(lecture.code, poll.n, poll.round, False, poll.body)

    def report(self, session_id: str, stops: dict[int, int] | None = None) -> str:
        """The report of the session's (newest) lecture as CSV: one row per poll or quiz, in
        order (reads the database: off the loop). ``stops``: a lesson's stop index by moment."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(REPORT_COLUMNS)
        for row in self.db.poll_report(session_id):
            cells = _report_row(row)
            writer.writerow([cells[0], (stops or {}).get(row["moment"], ""), *cells[1:]])
        return out.getvalue()


def _report_row(row: dict[str, Any]) -> list[Any]:
    body, kind = row["body"], row["kind"]
    prompt = body["prompt"] if kind == "bug" else body["question"]["prompt"]
    if kind == "bug":
        right = body.get("answer")
    else:
        closed = not row["open"] and not body.get("withdrawn")
        right = key_of(body["answer"]) if closed else None
    cells: list[Any] = [row["moment"], row["line"], kind, prompt, _truth_text(row)]
    for r in range(ROUNDS):
        if r >= row["round"]:
            cells += ["", ""]
            continue
        cast = row["rounds"][r] if r < len(row["rounds"]) else {}
        cells += [sum(cast.values()), "" if right is None else cast.get(right, 0)]
    return cells


def _truth_text(row: dict[str, Any]) -> str:
    """The report's ``answer`` cell: the true preset, or the true choices' texts."""
    body = row["body"]
    if row["kind"] == "bug":
        return str(body.get("answer") or "")
    if row["open"] or body.get("withdrawn"):
        return ""
    texts = {c["id"]: c["text"] for c in body["choices"]}
    return "; ".join(texts[i] for i in body["answer"]) or "nothing"
