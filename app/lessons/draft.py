"""A lesson drafted from a session (the page's "Make a lesson", issue 29): the session's setup
as a ``POST /api/sessions`` body, and every change of lr, max_norm or program it made as a
stop's ``change`` at the moment it was made (one made before the first line is the setup's);
with what the session holds now as a stop's ``expect``."""

from __future__ import annotations

from typing import Any

from app.engine.lessons import FORMAT, claims
from app.log.records import Event
from app.log.timeline import Timeline


def change_of(event: Event) -> dict[str, Any]:
    """An lr, max_norm or program event as the change a stop (or PATCH) says."""
    if event.op == "lr":
        return {"lr": event.lr}
    if event.op == "max_norm":
        return {"max_norm": event.max_norm}
    return {"program": list(event.program)}


def said(change: dict[str, Any]) -> str:
    """A change in words, for its stop's note."""
    parts = [f"`{k}` is {v}" for k, v in change.items() if k != "program"]
    if "program" in change:
        parts.append("the loop is `" + ", ".join(change["program"]) + "`")
    return " and ".join(parts)


def draft(timeline: Timeline, body: dict[str, Any]) -> dict[str, Any]:
    """``{"lesson": a document (setup = ``body`` with the start's changes, a stop for each
    later change), "here": {"at", "expect"}}``; ``body`` is the session's setup as a body.
    TimelineError when the session's oldest moments are no longer kept."""
    _, events = timeline.log()
    changes: dict[int, dict[str, Any]] = {}
    moment = 0
    for event in events:
        if event.moment:
            moment += 1
        elif event.op in ("lr", "max_norm", "program"):
            changes.setdefault(moment, {}).update(change_of(event))
    setup = {**body, **changes.pop(0, {})}
    stops = [
        {
            "at": at,
            "title": f"A change at moment {at}",
            "note": f"From here on, {said(change)}.",
            "change": change,
        }
        for at, change in sorted(changes.items())
    ]
    walk = timeline.setup.lesson
    lab = timeline.lab
    return {
        "lesson": {
            "format": FORMAT,
            "title": walk["title"] if walk else "",
            "summary": "",
            "setup": setup,
            "stops": stops,
        },
        "here": {"at": timeline.moment, "expect": claims(lab.named, lab.loss_value)},
    }
