"""Explain a number (issue 17): one element of a parameter's ``.grad`` as the parts that made
it since it was last set, each added part split into its examples' contributions.

The parts come from replaying the session's log on a scratch copy (``Timeline.scratch``) from
a keyframe at or before the line that last set ``.grad`` (zero_grad or resume; the start when
none did), with an ``engine.explain.Trail`` watching every line. The live Lab is not touched.
"""

from __future__ import annotations

from typing import Any

from app.engine.entries import ENTRIES
from app.engine.explain import Trail, described
from app.log.timeline import Timeline, TimelineError
from app.predict.predictions import NotOffered

SETS = ("zero_grad", "resume")  # the lines that set .grad to None or zeros


def explain(timeline: Timeline, param: str, index: int) -> dict[str, Any]:
    lab = timeline.lab
    if param not in lab.named:
        raise NotOffered(
            f"no parameter {param!r}: this model has {list(lab.named)}", ("query", "param")
        )
    p = lab.named[param]
    if not 0 <= index < p.numel():
        raise NotOffered(
            f"{param} has {p.numel()} elements: index must be 0 to {p.numel() - 1}",
            ("query", "index"),
        )
    if p.grad is None:
        raise TimelineError(
            f"{param}.grad is None: no backward has written it since it was emptied"
        )
    value = float(p.grad.detach().flatten()[index].item())
    kept = timeline.events[: timeline.head + 1 - timeline.first]
    sets = [
        seq
        for seq, e in enumerate(kept, start=timeline.first)
        if e.op == "line" and e.ok and ENTRIES[e.entry].method in SETS
    ]
    scratch, events = timeline.scratch(upto=sets[-1] if sets else timeline.first - 1)
    trail = Trail(scratch, param, index)
    if not sets and trail.start is not None:
        raise TimelineError(
            f"{param}.grad was last emptied before the oldest moment this timeline keeps "
            f"({timeline.first_moment}): its parts are no longer known"
        )
    for seq, e in events:
        if e.op != "line":
            e.redo(scratch)
            continue
        trail.before(scratch, e.entry)
        e.redo(scratch)
        trail.after(scratch, e.entry, e.ok, timeline.moment_of(seq), e.iteration)
    trail.split(scratch)
    return {
        "param": param,
        "index": index,
        "value": value,
        "parts": described(trail.parts),
        "examples_sum_error": trail.error(),
    }
