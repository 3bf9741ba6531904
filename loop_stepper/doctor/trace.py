"""``record`` with the doctor: a recorded trace's ``diagnoses``, each at its ``moment`` (the
index of the moment after the statement it names, the last one of that file and line before the
numbers showed the bug; for a statement that raised, the last moment before it) and at the
iteration of the recorder's loop. A statement is placed in the innermost frame the recorder
traces: the recorded source's, or an earlier cell's function it called (its ``file``)."""

from __future__ import annotations

import sys
from typing import Any

from loop_stepper.doctor.doctor import Doctor
from loop_stepper.doctor.where import Place
from loop_stepper.recorder import Trace
from loop_stepper.recorder import record as recorded
from loop_stepper.recorder.frame import Frame
from loop_stepper.recorder.observer import Observer


def record(
    source: str,
    namespace: dict[str, Any] | None = None,
    *,
    iterations: int | None = 3,
    filename: str | None = None,
    step_into: bool = False,
) -> Trace:
    """``loop_stepper.recorder.record``, and the doctor's findings in ``Trace.diagnoses``."""
    doctors: list[Doctor] = []

    def watcher(trace: Trace, name: str) -> Observer:

        def locate() -> Place:
            """The statement of the user's innermost traced frame (a library's loop the
            recorder follows is not the user's)."""
            frame = sys._getframe(1)
            while frame is not None:
                traced = getattr(frame.f_trace, "__self__", None)
                if isinstance(traced, Frame) and not traced.foreign:
                    statement = traced.source.at_line.get(frame.f_lineno)
                    line = frame.f_lineno if statement is None else statement.first
                    return frame.f_code.co_filename, line
                frame = frame.f_back  # type: ignore[assignment]
            return None, None

        doctor = Doctor(locate=locate, moment=lambda: len(trace.moments), iteration=lambda: 0)
        doctors.append(doctor)
        return doctor

    trace = recorded(
        source,
        namespace,
        iterations=iterations,
        filename=filename,
        watcher=watcher,
        step_into=step_into,
    )
    if not doctors:  # the recorder failed before it made the doctor: the cell ran untraced
        return trace
    doctor = doctors[0]
    doctor.close()
    try:
        trace.diagnoses = placed(doctor, trace)
    except Exception as error:  # ours: the findings stay unplaced, the trace stands
        doctor.failed("place", error)
    if trace.internal_error is None:
        trace.internal_error = doctor.internal_error
    return trace


def placed(doctor: Doctor, trace: Trace) -> list[dict[str, Any]]:
    """Each of the doctor's findings with its ``moment`` and that moment's iteration."""
    moments = trace.moments
    for d in doctor.diagnoses:
        # named when the numbers showed it (a step reading a stale .grad): the moment is the
        # latest one before then of the line it names (the backward that made it stale)
        at: int = min(d.get("moment", 0), len(moments) - 1)  # type: ignore[call-overload]
        file = d["file"] if d["file"] in trace.sources else None  # None: the source's own
        at = next(
            (
                i
                for i in range(at, -1, -1)
                if moments[i]["line"] == d["line"] and moments[i].get("file") == file
            ),
            at,
        )
        d["moment"] = at if moments else None  # type: ignore[typeddict-unknown-key]
        d["iteration"] = moments[at]["iteration"] if moments else 0
    return [dict(d) for d in doctor.diagnoses]
