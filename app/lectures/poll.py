"""A poll (issue 18): predict first's question about the instructor's next line put to a
lecture's followers, with its truth, their votes in one or two rounds, and its reveal.

The question is the predict issue's (``predictions.question``: the same object as
``GET /api/sessions/{id}/question``, its truth computed by running the line on a scratch copy);
a ``Poll`` keeps it with its truth, server side, for the lecture. Followers see ``public()``:
never the truth while it is open. Votes go through a ``Ballot`` per round (the quiz's flood
limits) and into the database, whose INSERT takes a vote only while its round is open, so a
process that has not heard of the reveal yet cannot count a late one. What the hub does with a
lecture's polls is ``polls.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from app.engine.questions import Choice, Question
from app.lectures.quizzes import Ballot
from app.predict.predictions import chosen


def key_of(ids: list[str]) -> str:
    """One vote as the ballot and the database keep it: the chosen ids in offered order."""
    return ",".join(ids)


def body_of(q: Question) -> dict[str, Any]:
    """What the database keeps of a poll: its question as asked, and its truth (server side
    only). The JSON's names are the stored ones."""
    return {
        "question": q.public(),
        "answer": list(q.answer),
        "explanation": q.explanation,
        "choices": q.revealed(),
    }


@dataclass
class Poll:
    """A lecture's newest poll, with its truth and this process's ballots."""

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
        """A poll as the database has it, with its votes so far (voter -> vote, per round)."""
        ballots = [Ballot(dict(cast)) for cast in (votes or [])[: row["round"]]]
        return cls(row["n"], row["moment"], row["body"], row["round"], row["open"], ballots)

    @property
    def question(self) -> dict[str, Any]:
        q: dict[str, Any] = self.body["question"]
        return q

    @property
    def truth(self) -> list[str]:
        """The ids of the true choices."""
        ids: list[str] = self.body["answer"]
        return ids

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
                answer=self.truth,
                explanation=self.body["explanation"],
                choices=self.body["choices"],
                rounds=self.body.get("rounds", []),
            )
        return data

    def counts(self) -> list[dict[str, int]]:
        """This process's votes: per round, how many cast each vote."""
        return [dict(Counter(b.votes.values())) for b in self.ballots]

    def rounds(self, counts: list[dict[str, int]]) -> list[dict[str, Any]]:
        """Per round: how many voted, how many chose each id; once closed how many were
        right (the whole vote: for ``writes`` exactly the true set)."""
        ids = [c["id"] for c in self.question["choices"]]
        right = key_of(self.truth)
        out = []
        for r in range(self.round):
            cast = counts[r] if r < len(counts) else {}
            per = dict.fromkeys(ids, 0)
            for vote, n in cast.items():
                for i in vote.split(",") if vote else []:
                    if i in per:
                        per[i] += n
            row: dict[str, Any] = {"answers": sum(cast.values()), "counts": per}
            if not self.open:
                row["correct"] = cast.get(right, 0)
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
            data.update(answer=self.truth, explanation=self.body["explanation"])
        return data

    def close(self, counts: list[dict[str, int]]) -> None:
        """The line ran: the truth is out, with how many were right in each round."""
        self.open = False
        rounds = self.rounds(counts)
        self.body["rounds"] = [{"answers": r["answers"], "correct": r["correct"]} for r in rounds]


def refreshed(poll: Poll | None, row: dict[str, Any] | None) -> Poll | None:
    """This process's poll after reading the database's newest poll or quiz (another process
    asked, started round 2 or revealed): the ballots of the rounds it already had are kept."""
    if row is None or row["kind"] == "bug":
        return None
    if poll is not None and poll.n == row["n"]:
        poll.round, poll.open, poll.body = row["round"], row["open"], row["body"]
        poll.grow()
        return poll
    return Poll.stored(row)
