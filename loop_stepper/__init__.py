"""Loop Stepper in your own code: record a training loop statement by statement on your own
model (``record``), step it in a notebook (``%load_ext loop_stepper``, ``%%step``, ``show``),
and name its silent bugs (``watch``, ``Trace.diagnoses``, ``loop-stepper doctor train.py``).

    trace = loop_stepper.record(source, globals(), iterations=3)
    trace.moments[4]["params"][0]["grad"]      # .grad after the 5th statement (None is not 0)
    trace.diagnoses                            # the doctor's findings, each at its moment

    with loop_stepper.watch() as doctor:
        train(model, loader)
    doctor.diagnoses                           # [{"bug", "file", "line", "iteration", ...}]

This package runs in the user's own Python and needs torch and numpy alone (the widget: the
``notebook`` extra). The classroom server is the package ``app`` (the ``server`` extra); it
imports this one, never the other way round.
"""

from __future__ import annotations

from typing import Any

from loop_stepper.doctor import BUGS, Doctor, watch
from loop_stepper.doctor.trace import record
from loop_stepper.recorder import MAX_MOMENTS, Moment, StatementError, Trace

__all__ = [
    "BUGS",
    "MAX_MOMENTS",
    "Doctor",
    "Moment",
    "StatementError",
    "Trace",
    "load_ipython_extension",
    "record",
    "show",
    "watch",
]


def show(trace: Trace) -> Any:
    """The widget stepping ``trace`` (needs the notebook extra: anywidget)."""
    from loop_stepper.notebook.widget import show as widget

    return widget(trace)


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext loop_stepper``: the ``%%step`` cell magic."""
    from loop_stepper.notebook.magic import load_ipython_extension as load

    load(shell)
