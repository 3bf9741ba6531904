"""Predict first (issue 17): the question about the line at the cursor, the prediction that
runs it, and the student's score, over a session's Timeline.

The truth comes from running the line on a scratch copy of the session (``Timeline.scratch``,
a replay with real PyTorch); the live Lab is not touched until a prediction runs the line, the
way ``next`` runs it. A prediction is an event in the session's log, right before the line it
is about, so it survives a restart, goes with the moments after a rewind, and is counted by
``score`` over the moments of the current timeline. Imports the timeline and the engine only.
"""

from __future__ import annotations

import hashlib
import random
import weakref
from collections.abc import Callable
from typing import Any

from app.engine import LineError
from app.engine.entries import ENTRIES
from app.engine.examples import Watch
from app.engine.predict import outcome, stores
from app.engine.questions import KINDS, Question, ask
from app.log.records import Event, PredictionRecord
from app.log.timeline import Timeline

Scored = Callable[[str, int, int], None]
"""Told ``(session id, questions asked, answered right)`` after a prediction is kept, in the
click's path: it must only take note (the LTI layer's grades queue it, issue 30)."""


class NotOffered(ValueError):
    """A choice the question did not offer (a 422)."""

    def __init__(self, message: str, loc: tuple[str, ...] = ("body", "choice")) -> None:
        super().__init__(message)
        self.loc = loc


# the question asked at each timeline's head, so that predict does not replay again
_asked: weakref.WeakKeyDictionary[Timeline, tuple[tuple[Any, ...], Question]] = (
    weakref.WeakKeyDictionary()
)


def _where(timeline: Timeline) -> tuple[Any, ...]:
    """What a question depends on: the log up to the head (an event is never changed in place,
    a new one is a new object, compared by identity) and where the Lab stands."""
    at = timeline.head - timeline.first
    event = timeline.events[at] if at >= 0 else None
    lab = timeline.lab
    return (timeline.setup, event, timeline.head, tuple(lab.program), lab.cursor, lab.lr)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return a[0] is b[0] and a[1] is b[1] and a[2:] == b[2:]


def seed(session_id: str, moment: int, entry: str) -> int:
    """One number per (session, moment, line): the same question when asked again, different
    kinds over the lines and iterations."""
    digest = hashlib.sha256(f"{session_id}/{moment}/{entry}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def question(timeline: Timeline, session_id: str) -> Question:
    """The question about the line at the cursor (computed on a scratch copy, then kept)."""
    where = _where(timeline)
    kept = _asked.get(timeline)
    if kept is not None and _same(kept[0], where):
        return kept[1]
    lab, events = timeline.scratch()
    watch = Watch()
    for _, event in events:
        line = ENTRIES[event.entry].method if event.op == "line" else ""
        watch.before(lab, line)
        event.redo(lab)
        watch.after(lab, line, event.ok)
    rnd = random.Random(seed(session_id, timeline.moment, lab.next_line))
    asked = ask(outcome(lab, watch.forward, rnd), rnd, stores(lab))
    _asked[timeline] = (where, asked)
    return asked


def chosen(q: Question, choice: str | list[str]) -> list[str]:
    """The choice as a list of offered ids; NotOffered for anything else."""
    offered = [c.id for c in q.choices]
    if q.multiple != isinstance(choice, list):
        wanted = "a list of ids" if q.multiple else "one id"
        raise NotOffered(f"this {q.kind} question takes {wanted} from {offered}")
    ids = choice if isinstance(choice, list) else [choice]
    unknown = [i for i in ids if i not in offered]
    if unknown:
        raise NotOffered(f"not offered: {unknown}; the choices are {offered}")
    return sorted(set(ids), key=offered.index)


def predict(
    timeline: Timeline, session_id: str, choice: str | list[str], scored: Scored | None = None
) -> dict[str, Any]:
    """Keep the prediction in the log, then run the line exactly as ``next`` does. The answer
    says whether the choice was right, the true ids, the explanation and what each choice
    believes; ``error`` is what ``next`` would have answered with its 409 when the line raised
    (the caller adds the Session when it ran). ``scored`` is told the session's score so far."""
    q = question(timeline, session_id)
    ids = chosen(q, choice)
    correct = ids == q.answer
    record: PredictionRecord = {"kind": q.kind, "choice": ids, "correct": correct}
    timeline.predicted(Event("predict", entry=q.line, prediction=record))
    if scored is not None:
        tally = score(timeline)
        scored(session_id, tally["asked"], tally["correct"])
    error = None
    try:
        timeline.next()
    except LineError as raised:
        error = {"detail": raised.message, "line": raised.line}
    return {
        "correct": correct,
        "answer": list(q.answer),
        "explanation": q.explanation,
        "choices": q.revealed(),
        "error": error,
    }


def score(timeline: Timeline) -> dict[str, Any]:
    """Predictions over the current timeline's kept log (those discarded by acting from a past
    moment are gone with the moments they were about)."""
    total = {"asked": 0, "correct": 0}
    by_line: dict[str, dict[str, int]] = {}
    by_kind: dict[str, dict[str, int]] = {k: {"asked": 0, "correct": 0} for k in KINDS}
    for e in timeline.events:
        if e.op != "predict" or e.prediction is None:
            continue
        right = int(bool(e.prediction["correct"]))
        for tally in (
            total,
            by_line.setdefault(e.entry, {"asked": 0, "correct": 0}),
            by_kind[e.prediction["kind"]],
        ):
            tally["asked"] += 1
            tally["correct"] += right
    return {**total, "by_line": by_line, "by_kind": by_kind}
