"""A recorded run: the moments after each statement, how the recording ended, and its JSON.

A moment is a dict in the shapes of the server's Session wherever they apply
(``loop_stepper/stores/views.py``): ``line`` and ``code`` (the statement just run), ``function``
(the function it ran in, None at the top), ``file`` (None for the recorded source, else the file
name of the user's other code it ran in: an earlier cell's ``train``, whose text is in
``Trace.sources``), ``iteration``, ``loss``, ``params`` (each ``{name, shape, dtype, value,
grad}``), ``graph``, ``optimizer_state``, and ``reads`` and ``writes``, the stores that statement
read and wrote.

Its JSON (``Trace.to_json``) is the packed form the widget holds: each distinct part once,
moments as indices into it; ``Trace.from_json`` gives every moment whole again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from loop_stepper.recorder.internal import InternalError
from loop_stepper.recorder.source import Statement
from loop_stepper.stores.views import GraphView, ParamStateView, ParamView


class Moment(TypedDict):
    line: int
    code: str
    function: str | None
    file: str | None
    iteration: int
    loss: float | None
    params: list[ParamView]
    graph: GraphView
    optimizer_state: list[ParamStateView]
    reads: list[str]
    writes: list[str]


class StatementError(str):
    """The error a statement raised, as its own words (``str`` of the exception: PyTorch's
    message for PyTorch's errors), with where it was raised: ``type`` (the exception's class
    name), ``line`` (1-based, in the source) and ``code`` (that statement's text)."""

    type: str
    line: int | None
    code: str | None

    def __new__(cls, message: str, type: str, line: int | None, code: str | None) -> StatementError:
        made = super().__new__(cls, message)
        made.type, made.line, made.code = type, line, code
        return made

    def as_json(self) -> dict[str, Any]:
        return {"message": str(self), "type": self.type, "line": self.line, "code": self.code}

    @classmethod
    def raised(
        cls, error: BaseException, filename: str, at_line: Mapping[int, Statement]
    ) -> StatementError:
        """``error`` as the user's code raised it: at the last line of ``filename`` (the
        recorded source) its traceback passed, that line's statement."""
        line: int | None = None
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        statement = None if line is None else at_line.get(line)
        first = None if statement is None else statement.first
        code = None if statement is None else statement.code
        return cls(str(error), type(error).__name__, first, code)


def plain(value: Any) -> Any:
    """``value`` as strict JSON data: NaN and the infinities as the strings "NaN", "Infinity"
    and "-Infinity" (as the server's answers spell them), tuples as lists."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def numbers(value: Any) -> Any:
    """``plain`` undone: the strings "NaN", "Infinity" and "-Infinity" as floats again."""
    if isinstance(value, str):
        return _SPELLED.get(value, value)
    if isinstance(value, dict):
        return {k: numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [numbers(v) for v in value]
    return value


_SPELLED = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_SCALARS = ("line", "code", "function", "file", "iteration", "loss", "reads", "writes")


@dataclass(repr=False)
class Trace:
    """What ``record`` saw. ``stopped`` says why it ended early (``iterations`` reached, the
    bound of moments) or is None when the source ran to its end or raised (``error``).
    ``diagnoses`` are the doctor's findings, each at its moment. ``sources`` holds the text of
    each file of the user's other code that moments point into (``file``), ``titles`` how the
    user knows it (a cell's ``In [3]``). ``internal_error`` is a bug of loop_stepper's own that
    stopped the recording (or the doctor) there while the cell ran on to its end; never the
    user's error."""

    source: str
    moments: list[Moment] = field(default_factory=list)
    # the stores before the first statement (what the namespace held: a model made earlier)
    start: dict[str, Any] = field(default_factory=dict)
    iterations: int = 0
    stopped: str | None = None
    error: StatementError | None = None
    diagnoses: list[dict[str, Any]] = field(default_factory=list)
    ended: Literal["end", "stopped", "error"] = "end"
    sources: dict[str, str] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    internal_error: InternalError | None = None

    def __repr__(self) -> str:
        return f"<Trace: {headline(self.as_dict())}>"

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "iterations": self.iterations,
            "ended": self.ended,
            "stopped": self.stopped,
            "error": None if self.error is None else self.error.as_json(),
            "diagnoses": self.diagnoses,
            "start": self.start,
            "sources": self.sources,
            "titles": self.titles,
            "moments": self.moments,
            # only when there is one: a trace's keys stay what they were
            **({} if (e := self.internal_error) is None else {"internal_error": e.as_json()}),
        }

    def to_json(self) -> str:
        """The trace as JSON in its packed form (``packed``: each distinct part once in
        ``parts``, a moment's ``value``, ``grad``, ``graph`` and optimizer ``state`` the index of
        its part), so a long trace costs about what its statements changed; NaN and the
        infinities as the strings "NaN", "Infinity", "-Infinity", as the server's answers spell
        them. ``Trace.from_json`` reads it back with every moment whole."""
        return json.dumps(plain(self.packed()), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        """A trace from ``to_json``'s text (or a JSON of whole moments, without ``parts``): every
        moment whole, its parts shared with the moments that share them, and the numbers
        spelled "NaN", "Infinity", "-Infinity" floats again."""
        data = json.loads(text)
        error = data.get("error")
        internal = data.get("internal_error")
        return cls(
            source=data["source"],
            moments=unpacked(data),
            start=numbers(data.get("start", {})),
            iterations=data.get("iterations", 0),
            stopped=data.get("stopped"),
            error=None
            if error is None
            else StatementError(error["message"], error["type"], error["line"], error["code"]),
            diagnoses=data.get("diagnoses", []),
            internal_error=None if internal is None else InternalError(**internal),
            ended=data.get("ended", "end"),
            sources=data.get("sources", {}),
            titles=data.get("titles", {}),
        )

    def packed(self) -> dict[str, Any]:
        """The trace as the widget holds it: each distinct part of the moments (a tensor's view,
        a graph, a state row) once in ``parts``, and each moment's parts as indices into it. A
        moment shares what it did not change with the one before, so a trace of many moments
        of a big model stays about the size of what changed (``Trace.moments`` shares them the
        same way, as objects). Parts are the same part when they are one object or equal in
        content (two parameters' empty optimizer state, a value that came back)."""
        parts: list[Any] = []
        index: dict[int, int] = {}  # by the object: most parts are shared objects
        by_content: dict[str, int] = {}

        def ref(value: Any) -> int:
            at = index.get(id(value))
            if at is None:
                key = json.dumps(value, separators=(",", ":"))
                at = by_content.get(key)
                if at is None:
                    at = by_content[key] = len(parts)
                    parts.append(value)
                index[id(value)] = at
            return at

        moments = []
        for m in self.moments:
            moments.append(
                {
                    **{k: m[k] for k in _SCALARS},  # type: ignore[literal-required]
                    "params": [
                        {
                            "name": p["name"],
                            "shape": p["shape"],
                            "dtype": p["dtype"],
                            "value": ref(p["value"]),
                            "grad": None if p["grad"] is None else ref(p["grad"]),
                        }
                        for p in m["params"]
                    ],
                    "graph": ref(m["graph"]),
                    "optimizer_state": [
                        {"name": row["name"], "state": ref(row["state"])}
                        for row in m["optimizer_state"]
                    ],
                }
            )
        packed = self.as_dict()
        packed["moments"] = moments
        packed["parts"] = parts
        return packed


def unpacked(data: Mapping[str, Any]) -> list[Moment]:
    """The moments of a packed trace (``Trace.packed``, ``to_json``'s data), each whole; a
    trace without ``parts`` holds them whole already."""
    if "parts" not in data:
        return [numbers(m) for m in data["moments"]]
    parts = [numbers(p) for p in data["parts"]]
    moments: list[Moment] = []
    for m in data["moments"]:
        moment = {k: m.get(k) for k in _SCALARS}
        moment["loss"] = numbers(moment["loss"])
        moment["params"] = [
            {
                **p,
                "value": parts[p["value"]],
                "grad": None if p["grad"] is None else parts[p["grad"]],
            }
            for p in m["params"]
        ]
        moment["graph"] = parts[m["graph"]]
        moment["optimizer_state"] = [
            {"name": row["name"], "state": parts[row["state"]]} for row in m["optimizer_state"]
        ]
        moments.append(moment)  # type: ignore[arg-type]
    return moments


def headline(data: Mapping[str, Any]) -> str:
    """One line: the moments, the iterations, how the recording ended, the diagnoses."""
    moments, iterations = len(data["moments"]), data["iterations"]
    lines = len(data["source"].splitlines())
    said = [
        f"{moments} moment{'s' * (moments != 1)} of a cell of {lines} line{'s' * (lines != 1)}",
        f"{iterations} iteration{'s' * (iterations != 1)}",
        {"end": "ran to its end", "stopped": "stopped early", "error": "stopped by an error"}[
            data["ended"]
        ],
    ]
    found = len(data["diagnoses"])
    said.append(f"{found} diagnos{'es' if found != 1 else 'is'}")
    return ", ".join(said)


def summary(data: Mapping[str, Any]) -> str:
    """A trace in words (its packed or whole dict): the cell, the moments, the iterations and
    the loss, how it ended, the other code it went into, the doctor's findings. What a notebook
    shows of the widget where widgets do not render (nbconvert, a terminal)."""
    lines = [f"Loop Stepper: {headline(data)}"]
    first = next((t.strip() for t in data["source"].splitlines() if t.strip()), "")
    lines.append(f"  the cell: {first}" + (" …" if len(data["source"].splitlines()) > 1 else ""))
    losses = [m["loss"] for m in data["moments"] if "loss" in m["writes"] and m["loss"] is not None]
    if losses:
        lines.append(f"  loss: {_number(losses[0])} at first, {_number(losses[-1])} at last")
    error = data.get("error")
    if error is not None:
        lines.append(f"  error at line {error['line']}: {error['type']}: {error['message']}")
    if data.get("stopped"):
        lines.append(f"  {data['stopped']}")
    internal = data.get("internal_error")
    if internal is not None and internal["component"] == "doctor":  # the recording went on
        lines.append(f"  {InternalError(**internal).said('')}")
    titles = data.get("titles", {})
    inside: dict[tuple[str, str], int] = {}
    for m in data["moments"]:
        if m.get("file") is not None:
            key = (m["function"] or "<module>", titles.get(m["file"], m["file"]))
            inside[key] = inside.get(key, 0) + 1
    for (function, where), count in inside.items():
        lines.append(f"  {count} moment{'s' * (count != 1)} inside {function}() of {where}")
    for d in data["diagnoses"]:
        lines.append(
            f"  doctor: line {d.get('line')}, iteration {d.get('iteration')}: "
            f"{d.get('bug')} — {d.get('message')}"
        )
    return "\n".join(lines)


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
