"""The doctor over one of the stepper's own sessions: its log (the setup and every event up to
the current moment) replayed on a fresh Lab under the doctor, each diagnosis at the program's
line (1-based, as the page numbers the loop) in the pass of the loop it ran in.

Diagnoses are about the loop the session runs now: a program change forgets the ones before.
A bug that is one of the stepper's presets is said in the preset's own words (one source for
both: ``app/engine/program.py``), unless its numbers are another case than the preset's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from app.engine import Lab, LineError
from app.engine.program import PRESETS
from app.log.records import Event, Setup
from loop_stepper.doctor.bugs import Diagnosis
from loop_stepper.doctor.doctor import Doctor
from loop_stepper.doctor.where import Place
from loop_stepper.recorder.probe import Probe

LOOP = "loop"  # the file name of a session's diagnoses: its loop program
MAX_LINES = 2_000  # lines of a log replayed at most (a longer log: its first lines)
EXPLANATIONS = {p.name: p.explanation for p in PRESETS if p.name != "correct"}


def diagnose(setup: Setup, events: Sequence[Event]) -> list[Diagnosis]:
    """The diagnoses of a session's log."""
    lab = Lab(setup)
    now: dict[str, int | None] = {"line": None, "pass": 1}

    def kept() -> Iterator[tuple[str, Any, Place | None]]:
        line = _line_of(lab.program, "log_tensor")
        yield "running_loss", lab.running.value, (LOOP, line)

    doctor = Doctor(
        locate=lambda: (LOOP, now["line"]),
        iteration=lambda: now["pass"] or 1,
        frames=lambda: [],
        kept=kept,
        named=lambda: {id(p): n for n, p in lab.named.items()},
    )
    lines = 0
    with Probe(doctor):
        for event in events:
            if event.op == "program":
                doctor.forget()
            elif event.op == "line":
                lines += 1
                if lines > MAX_LINES:
                    break
                at = lab.cursor if event.advance else None
                now["line"] = at + 1 if at is not None else _line_of(lab.program, event.entry)
            with contextlib.suppress(LineError, RuntimeError):  # it failed in the log too
                event.redo(lab)
            if event.op == "line" and event.advance and lab.cursor == 0:
                now["pass"] = (now["pass"] or 1) + 1
        doctor.close()
    return [_said(d) for d in doctor.diagnoses]


def _said(d: Diagnosis) -> Diagnosis:
    explanation = EXPLANATIONS.get(d["bug"])
    other_case = d["bug"] == "step_first" and d["evidence"].get("read") != "None"
    if explanation is None or other_case:
        return d
    return {**d, "message": explanation}


def _line_of(program: list[str], entry: str) -> int | None:
    return program.index(entry) + 1 if entry in program else None
