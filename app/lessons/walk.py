"""A session walking a lesson: to its next stop (the stop's change applied there), a lesson's
claims checked on a fresh session of it, and a session's score."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.engine import LineError, Toggles
from app.engine.lessons import Failure, failures
from app.engine.program import program_for
from app.log.timeline import Timeline, TimelineError

MAX_LINES = 10_000  # lines a walk to one stop may run (a stop's moment is at most this)


def next_stop(timeline: Timeline) -> int:
    """Run the lines up to the next stop after the session's moment and apply its change;
    the stop's index. A line PyTorch refuses ends the walk there (its error is the answer)."""
    walk = timeline.setup.lesson
    if walk is None:
        raise TimelineError("this session is not on a lesson")
    moment = timeline.moment
    ahead = [(i, s) for i, s in enumerate(walk["stops"]) if s["at"] > moment]
    if not ahead:
        raise TimelineError("past the lesson's last stop: nothing more to walk to")
    index, stop = ahead[0]
    for _ in range(min(stop["at"] - moment, MAX_LINES)):
        timeline.next()  # a LineError stops the walk where PyTorch refused
    change(timeline, stop.get("change") or {})
    return index


def change(timeline: Timeline, changes: dict[str, Any]) -> None:
    """A stop's ``change``, as PATCH /api/sessions/{id} applies it."""
    if "lr" in changes:
        timeline.set_lr(float(changes["lr"]))
    if "max_norm" in changes:
        timeline.set_max_norm(float(changes["max_norm"]))
    if "program" in changes:
        timeline.set_program(list(changes["program"]))
    elif "skip_zero_grad" in changes or "step_first" in changes:
        now = timeline.lab.toggles
        toggles = Toggles(
            bool(changes.get("skip_zero_grad", now.skip_zero_grad)),
            bool(changes.get("step_first", now.step_first)),
        )
        lab = timeline.lab
        timeline.set_program(program_for(toggles, lab.setup.accumulate, lab.setting.grad_scaler))


def check(timeline: Timeline, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every stop's claims on a fresh session of the lesson, walked line by line: per stop
    ``{"at", "holds", "failures"}``. ``raises``: the line after the stop is refused."""
    report: list[dict[str, Any]] = []
    stopped: str | None = None
    for stop in doc["stops"]:
        found: list[Failure] = []
        while stopped is None and timeline.moment < stop["at"]:
            try:
                timeline.next()
            except LineError as error:
                stopped = f"moment {timeline.moment}: {error.message}"
        if timeline.moment != stop["at"]:
            found.append({"claim": "at", "expected": stop["at"], "actual": stopped})
        else:
            lab = timeline.lab
            expect = stop.get("expect") or {}
            found += failures(expect, lab.named, lab.loss_value)
            if "raises" in expect:
                try:
                    timeline.next()
                    found.append({"claim": "raises", "expected": expect["raises"], "actual": None})
                except LineError as error:
                    if (
                        expect["raises"] not in ("RuntimeError", "Error")
                        and expect["raises"] not in error.message
                    ):
                        found.append(
                            {
                                "claim": "raises",
                                "expected": expect["raises"],
                                "actual": error.message,
                            }
                        )
            change(timeline, stop.get("change") or {})
        report.append({"at": stop["at"], "holds": not found, "failures": found})
    return report


def score(
    doc_stops: list[dict[str, Any]], answers: dict[int, bool], predictions: dict[int, bool]
) -> dict[str, Any]:
    """Custom questions answered (by stop) and auto ones (the predictions made at a stop's
    moment), counted alike."""
    by_stop = []
    for i, stop in enumerate(doc_stops):
        question = stop.get("question")
        if question is None:
            continue
        got = answers.get(i) if isinstance(question, dict) else predictions.get(stop["at"])
        kind = "custom" if isinstance(question, dict) else "auto"
        by_stop.append(
            {
                "stop": i,
                "at": stop["at"],
                "kind": kind,
                "answered": got is not None,
                "correct": bool(got),
            }
        )
    return {
        "asked": len(by_stop),
        "answered": sum(s["answered"] for s in by_stop),
        "correct": sum(s["correct"] for s in by_stop),
        "by_stop": by_stop,
    }


def questions(stops: list[dict[str, Any]]) -> int:
    """The questions a lesson asks (custom and auto): an LMS's ``scoreMaximum`` for it."""
    return sum(stop.get("question") is not None for stop in stops)


def lesson_score(timeline: Timeline, answers: dict[int, bool]) -> dict[str, Any]:
    """The score of a session on a lesson: its custom ``answers`` (by stop) and the
    predictions it made at a stop's moment (its auto questions)."""
    predictions = {
        row["n"] - 1: row["predicted"] for row in timeline.summary() if row["predicted"] is not None
    }
    walk = timeline.setup.lesson or {"stops": []}
    return score(walk["stops"], answers, predictions)


Graded = Callable[[str, int, int, int, bool], None]


def asks_auto(timeline: Timeline) -> bool:
    """Whether a session on a lesson stands at a stop whose question is ``auto`` (a
    prediction made here answers it)."""
    walk = timeline.setup.lesson
    return walk is not None and any(
        s["at"] == timeline.moment and s.get("question") == "auto" for s in walk["stops"]
    )


def at_end(timeline: Timeline) -> bool:
    """Whether a session on a lesson stands at (or past) its last stop."""
    walk = timeline.setup.lesson
    return walk is not None and timeline.moment >= walk["stops"][-1]["at"]


def grade(timeline: Timeline, session_id: str, answers: dict[int, bool], graded: Graded) -> None:
    """Tell ``graded`` (an LMS's gradebook) the lesson's score after an answer: answered,
    right, out of its questions, and whether the student is done (every question answered,
    or answering at the last stop). Nothing for a lesson that asks nothing, or a session on
    none."""
    if timeline.setup.lesson is None:
        return
    said = lesson_score(timeline, answers)
    if said["asked"]:
        done = at_end(timeline) or said["answered"] >= said["asked"]
        graded(session_id, said["answered"], said["correct"], said["asked"], done)
