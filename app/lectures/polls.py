"""The class predicts (issue 18): the question about the instructor's next line put to a
lecture's followers, their votes in one or two rounds, the reveal, and the report.

The question is the predict issue's (``predictions.question``: the same object as
``GET /api/sessions/{id}/question``, its truth computed by running the line on a scratch copy);
a ``Poll`` keeps it with its answer, server side, for the lecture. Followers see ``public()``:
never the answer while it is open. Votes go through a ``Ballot`` per round (the quiz's flood
limits) and into the database, whose INSERT takes a vote only while its round is open, so a
process that has not heard of the reveal yet cannot count a late one. The report reads every
question of the lecture (the "which bug" quizzes too, kind ``bug``) back from the database.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.db import Database
from app.engine.questions import Choice, Question
from app.lectures.quizzes import Ballot, LectureConflict
from app.log.records import Change
from app.log.timeline import Timeline
from app.predict.predictions import chosen, question

if TYPE_CHECKING:
    from app.lectures.broadcast import Broadcast
    from app.lectures.lecture import Lecture

BUG_PROMPT = "Which bug is this?"
REPORT_COLUMNS = [
    "moment",
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


def key_of(ids: list[str]) -> str:
    """One answer as the ballot and the database keep it: the chosen ids in offered order."""
    return ",".join(ids)


def body_of(q: Question) -> dict[str, Any]:
    """What the database keeps of a question: as asked, and its truth (server side only)."""
    return {
        "question": q.public(),
        "answer": list(q.answer),
        "explanation": q.explanation,
        "choices": q.revealed(),
    }


@dataclass
class Poll:
    """A lecture's newest question about a line, with its truth and this process's ballots."""

    n: int  # its number in the lecture
    moment: int
    body: dict[str, Any]
    round: int = 1
    open: bool = True
    ballots: list[Ballot] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.grow()

    def grow(self) -> None:
        """A ballot for every round so far."""
        while len(self.ballots) < self.round:
            self.ballots.append(Ballot())

    @classmethod
    def stored(cls, row: dict[str, Any], votes: list[dict[str, str]] | None = None) -> Poll:
        poll = cls(row["n"], row["moment"], row["body"], row["round"], row["open"])
        for ballot, answers in zip(poll.ballots, votes or [], strict=False):
            ballot.answers = dict(answers)
        return poll

    @property
    def question(self) -> dict[str, Any]:
        q: dict[str, Any] = self.body["question"]
        return q

    @property
    def withdrawn(self) -> bool:
        return bool(self.body.get("withdrawn"))

    @property
    def ballot(self) -> Ballot:
        return self.ballots[self.round - 1]

    def key(self, choice: str | list[str]) -> str:
        """The choice as kept; ``NotOffered`` (a 422) for one the question did not offer."""
        q = self.question
        asked = Question(
            q["line"],
            q["kind"],
            q["prompt"],
            [Choice(c["id"], c["text"], None) for c in q["choices"]],
            q["multiple"],
            [],
            "",
        )
        return key_of(chosen(asked, choice))

    def public(self) -> dict[str, Any] | None:
        """What followers see: the question and its round; once closed the truth, what each
        choice believes and how many were right in each round."""
        if self.withdrawn:
            return None
        data = {**self.question, "round": self.round, "open": self.open}
        if not self.open:
            data.update(
                answer=self.body["answer"],
                explanation=self.body["explanation"],
                choices=self.body["choices"],
                rounds=self.body.get("rounds", []),
            )
        return data

    def counts(self) -> list[dict[str, int]]:
        """This process's votes: per round, how many gave each answer."""
        return [dict(Counter(b.answers.values())) for b in self.ballots]

    def rounds(self, counts: list[dict[str, int]]) -> list[dict[str, Any]]:
        """Per round: how many answered, how many chose each id; once closed how many were
        right (the whole answer: for ``writes`` exactly the true set)."""
        ids = [c["id"] for c in self.question["choices"]]
        right = key_of(self.body["answer"])
        out = []
        for r in range(self.round):
            given = counts[r] if r < len(counts) else {}
            per = dict.fromkeys(ids, 0)
            for answer, n in given.items():
                for i in answer.split(",") if answer else []:
                    if i in per:
                        per[i] += n
            row: dict[str, Any] = {"answers": sum(given.values()), "counts": per}
            if not self.open:
                row["correct"] = given.get(right, 0)
            out.append(row)
        return out

    def tally(self, counts: list[dict[str, int]], followers: int) -> dict[str, Any]:
        """The instructor's live view: counts only, no voter ids."""
        data: dict[str, Any] = {
            "question": self.question,
            "round": self.round,
            "open": self.open,
            "rounds": self.rounds(counts),
            "followers": followers,
        }
        if not self.open:
            data.update(answer=self.body["answer"], explanation=self.body["explanation"])
        return data

    def close(self, counts: list[dict[str, int]]) -> None:
        """The line ran: the answer is out, with how many were right in each round."""
        self.open = False
        rounds = self.rounds(counts)
        self.body["rounds"] = [{"answers": r["answers"], "correct": r["correct"]} for r in rounds]


def refreshed(poll: Poll | None, row: dict[str, Any] | None) -> Poll | None:
    """This process's poll after reading the database's newest question (another process asked,
    started round 2 or revealed): the ballots of the rounds it already had are kept."""
    if row is None or row["kind"] == "bug":
        return None
    if poll is not None and poll.n == row["n"]:
        poll.round, poll.open, poll.body = row["round"], row["open"], row["body"]
        poll.grow()
        return poll
    return Poll.stored(row)


def _answer_text(row: dict[str, Any]) -> str:
    body = row["body"]
    if row["kind"] == "bug":
        return str(body.get("answer") or "")
    if row["open"] or body.get("withdrawn"):
        return ""
    texts = {c["id"]: c["text"] for c in body["choices"]}
    return "; ".join(texts[i] for i in body["answer"]) or "nothing"


def report(rows: list[dict[str, Any]]) -> str:
    """The lecture's report as CSV: one row per question asked, in order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(REPORT_COLUMNS)
    for row in rows:
        body, kind = row["body"], row["kind"]
        prompt = body["prompt"] if kind == "bug" else body["question"]["prompt"]
        if kind == "bug":
            right = body.get("answer")
        else:
            closed = not row["open"] and not body.get("withdrawn")
            right = key_of(body["answer"]) if closed else None
        cells: list[Any] = [row["moment"], row["line"], kind, prompt, _answer_text(row)]
        for r in range(ROUNDS):
            if r >= row["round"]:
                cells += ["", ""]
                continue
            given = row["rounds"][r] if r < len(row["rounds"]) else {}
            cells += [sum(given.values()), "" if right is None else given.get(right, 0)]
        writer.writerow(cells)
    return out.getvalue()


class Predicting:
    """The hub's part for the class's predictions (``LectureHub`` mixes it in)."""

    db: Database
    broadcast: Broadcast

    def publish(self, lecture: Lecture, timeline: Timeline) -> None: ...

    # -- the class predicts the next line (issue 18) ------------------------------------

    @staticmethod
    def _predicting(lecture: Lecture) -> None:
        if lecture.poll is not None and lecture.poll.open:
            raise LectureConflict("the class is predicting the next line: Next line reveals it")

    def predict(self, lecture: Lecture, timeline: Timeline) -> dict[str, Any]:
        """Put the question about the line at the cursor to the class, round 1 (under the
        session's lock; computing its truth replays the session on a scratch copy)."""
        if lecture.hidden:
            raise LectureConflict('a "which bug" question is open: reveal it first')
        self._predicting(lecture)
        q = question(timeline, lecture.session_id)
        body = body_of(q)
        n = self.db.poll_ask(
            lecture.code, lecture.session_id, timeline.moment, q.line, q.kind, body
        )
        lecture.poll = Poll(n, timeline.moment, body)
        self.publish(lecture, timeline)
        return self.predictions(lecture)

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
        return self.predictions(lecture)

    def vote(self, lecture: Lecture, choice: str | list[str], voter: str | None) -> str:
        """One answer per voter per round (again: it replaces the last), in the database only
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
            poll.ballot.answers.pop(voter, None)
        raise LectureConflict("no prediction is open in this lecture right now")

    def predictions(self, lecture: Lecture) -> dict[str, Any]:
        """The instructor's live view of the prediction (may read the database: off the loop)."""
        if lecture.poll is None:
            raise LectureConflict("no prediction has been asked: POST …/lecture/question")
        counts, others = self.broadcast.poll_counts(lecture, lecture.poll)
        return lecture.poll.tally(counts, lecture.followers + others)

    def report(self, session_id: str) -> list[dict[str, Any]]:
        return self.db.poll_report(session_id)

    def _settle(self, lecture: Lecture, change: Change) -> None:
        """A line ran: the prediction closes and its answer goes out with the line's event.
        A rewind, a reset or a change of lr or program first: the question (about a line in
        a state that is gone) is withdrawn. Anything else (a prediction of the instructor's
        own) leaves it open."""
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
