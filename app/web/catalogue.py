"""What the page knows of the engine, read off its tables: the loop entries, the scenarios, the
presets and the default programs. Rendered into the templates as JSON (``#catalogue``), so the
page holds no list of its own and needs no request before it can draw its menus."""

from __future__ import annotations

import itertools
from dataclasses import asdict
from functools import cache
from typing import Any

from app.engine.entries import ENTRIES, Entry
from app.engine.program import MAX_PROGRAM, PRESETS, Toggles, program_for, with_scaler
from app.engine.scenarios import SCENARIOS
from app.spec.layers import catalogue as spec_tables
from app.spec.spec import SCENARIO_SPECS


def entry_out(entry: Entry) -> dict[str, Any]:
    """One row of the table as the page reads it: ``python`` is the plain style's line."""
    return {
        "name": entry.name,
        "method": entry.method,
        "arguments": entry.kwargs,
        "python": entry.code(),
        "comment": entry.comment,
        "reads": list(entry.reads),
        "writes": list(entry.writes),
    }


def presets_out() -> list[dict[str, Any]]:
    """The presets as ``GET /api/presets`` gives them."""
    return [
        {
            "name": p.name,
            "title": p.title,
            "program": list(p.program),
            "explanation": p.explanation,
            "setup": dict(p.setup),
        }
        for p in PRESETS
    ]


BOTH = (False, True)


def defaults() -> list[dict[str, Any]]:
    """``program_for`` of every toggle, accumulation any scenario offers and GradScaler: what
    the page compares a session's program with (a default loop needs no program in the URL)."""
    ks = sorted({k for info, _ in SCENARIOS.values() for k in info.accumulate})
    return [
        {
            "skip_zero_grad": skip,
            "step_first": first,
            "accumulate": k,
            "scaler": scaler,
            "program": program_for(Toggles(skip, first), k, scaler),
        }
        for skip, first, k, scaler in itertools.product(BOTH, BOTH, ks, BOTH)
    ]


def scenarios_out() -> list[dict[str, Any]]:
    """The scenarios as ``GET /api/scenarios`` gives them: each with the spec that makes it as
    a model of one's own (neuron and moons, bit for bit; the parabola has none)."""
    return [
        {**asdict(info), "spec": SCENARIO_SPECS.get(name)} for name, (info, _) in SCENARIOS.items()
    ]


@cache
def catalogue() -> dict[str, Any]:
    return {
        "entries": [entry_out(e) for e in ENTRIES.values()],
        "scenarios": scenarios_out(),
        # each preset also as a session with a GradScaler runs it (scaler.update() at its end)
        "presets": [{**p, "scaled_program": with_scaler(p["program"])} for p in presets_out()],
        "defaults": defaults(),
        "max_program": MAX_PROGRAM,
        # your own model (issue 28): the layer types, losses and scikit-learn sets a spec may
        # name, each with its arguments, for the "Build your own" panel
        "build": spec_tables(),
    }
