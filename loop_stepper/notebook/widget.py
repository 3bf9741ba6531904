"""The widget: a recorded trace stepped in the browser, Back / Next line / the timeline, with
the page's own views of the stores (anywidget; nothing from a CDN, the bundle ships in the
package). The trace is the widget's synced state: stepping needs no kernel, and a notebook
saved with its widget state still steps. Where widgets do not render (nbconvert, a terminal), its
text is a summary of the trace: the cell, its moments and iterations, the doctor's findings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from loop_stepper.recorder import Trace
from loop_stepper.recorder.trace import plain, summary

HERE = Path(__file__).parent


class Stepper(anywidget.AnyWidget):
    """One trace, stepped. ``trace`` is ``Trace.packed()`` as JSON data (NaN as "NaN")."""

    _esm = (HERE / "widget.js").read_text()
    _css = (HERE / "widget.css").read_text()
    trace = traitlets.Dict().tag(sync=True)

    def __init__(self, trace: Trace, **kwargs: Any) -> None:
        super().__init__(trace=packed(trace), **kwargs)

    def __repr__(self) -> str:
        """The trace in words: also the ``text/plain`` of the widget's display data (anywidget
        puts ``repr`` there), what a notebook shows where the widget does not render."""
        return summary(self.trace)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def packed(trace: Trace) -> dict[str, Any]:
    """The trace as the widget's state: plain JSON (the comm's encoder has no NaN)."""
    data: dict[str, Any] = json.loads(json.dumps(plain(trace.packed()), allow_nan=False))
    return data


def show(trace: Trace) -> Stepper:
    """A widget stepping ``trace``; the last value of a cell (or ``display``) shows it."""
    return Stepper(trace)
