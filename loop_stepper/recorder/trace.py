"""A recorded run: the moments after each statement, how the recording ended, and its JSON.

A moment is a dict in the shapes of the server's Session wherever they apply
(``loop_stepper/stores/views.py``): ``line`` and ``code`` (the statement just run), ``function``
(the function of the source it ran in, None at the top), ``iteration``, ``loss``, ``params`` (each
``{name, shape, dtype, value, grad}``), ``graph``, ``optimizer_state``, and ``reads`` and
``writes``, the stores that statement read and wrote.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from loop_stepper.stores.views import GraphView, ParamStateView, ParamView


class Moment(TypedDict):
    line: int
    code: str
    function: str | None
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


@dataclass
class Trace:
    """What ``record`` saw. ``stopped`` says why it ended early (``iterations`` reached, the
    bound of moments) or is None when the source ran to its end or raised (``error``).
    ``diagnoses`` are the doctor's findings, each at its moment."""

    source: str
    moments: list[Moment] = field(default_factory=list)
    # the stores before the first statement (what the namespace held: a model made earlier)
    start: dict[str, Any] = field(default_factory=dict)
    iterations: int = 0
    stopped: str | None = None
    error: StatementError | None = None
    diagnoses: list[dict[str, Any]] = field(default_factory=list)
    ended: Literal["end", "stopped", "error"] = "end"

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "iterations": self.iterations,
            "ended": self.ended,
            "stopped": self.stopped,
            "error": None if self.error is None else self.error.as_json(),
            "diagnoses": self.diagnoses,
            "start": self.start,
            "moments": self.moments,
        }

    def to_json(self) -> str:
        """The trace as JSON, every moment whole; NaN and the infinities as the strings
        "NaN", "Infinity", "-Infinity", as the server's answers spell them."""
        return json.dumps(plain(self.as_dict()), separators=(",", ":"), allow_nan=False)

    def packed(self) -> dict[str, Any]:
        """The trace as the widget holds it: each distinct part of the moments (a tensor's view,
        a graph, a state row) once in ``parts``, and each moment's parts as indices into it. A
        moment shares what it did not change with the one before, so a trace of many moments
        of a big model stays about the size of what changed (``Trace.moments`` shares them the
        same way, as objects)."""
        parts: list[Any] = []
        index: dict[int, int] = {}

        def ref(value: Any) -> int:
            at = index.get(id(value))
            if at is None:
                at = index[id(value)] = len(parts)
                parts.append(value)
            return at

        moments = []
        for m in self.moments:
            moments.append(
                {
                    **{k: m[k] for k in ("line", "code", "function", "iteration", "loss")},
                    "reads": m["reads"],
                    "writes": m["writes"],
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
