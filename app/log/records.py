"""The log's records: what a session was created with (Setup, defined in the engine: a Lab is
built from it), what was done to it (Event), what one action changed in the log (Change) and a log
as the database reads it back (Saved).

Plain data with their JSON forms; the timeline writes them, the database keeps them, the export
reads them. Imports the engine only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NotRequired, Protocol, TypedDict

from app.engine import Lab, LabState, LineError
from app.engine.setup import Setup
from app.engine.views import LossPointView

# Setup, defined in the engine, is a log's first record: the layers above import it from here
__all__ = ["AT_END", "Change", "Event", "KeyframeSource", "Saved", "Setup"]


class PredictionRecord(TypedDict):
    """A prediction about the line that follows it: the question's kind, the ids chosen, and
    whether they were the true ones."""

    kind: str
    choice: list[str]
    correct: bool


class EventJson(TypedDict):
    """An Event as the database keeps it: ``op`` and the keys of that op (see ``to_json``)."""

    op: Literal["line", "lr", "program", "max_norm", "predict"]
    entry: NotRequired[str]
    ok: NotRequired[bool]
    advance: NotRequired[bool]
    error: NotRequired[str | None]
    iteration: NotRequired[int]
    loss: NotRequired[float | None]
    point: NotRequired[LossPointView]
    lr: NotRequired[float]
    program: NotRequired[list[str]]
    max_norm: NotRequired[float]
    kind: NotRequired[str]  # predict: the PredictionRecord's three
    choice: NotRequired[list[str]]
    correct: NotRequired[bool]


@dataclass(frozen=True, slots=True)
class Event:
    """One action: a line (that ran, or failed in PyTorch's words), an lr, program or max_norm
    change, or a prediction about the line that follows it (issue 17)."""

    op: Literal["line", "lr", "program", "max_norm", "predict"]
    entry: str = ""  # line: the program entry that ran
    advance: bool = False  # line: run by next, so the cursor moved on
    lr: float = 0.0
    program: tuple[str, ...] = ()
    max_norm: float = 0.0
    ok: bool = True
    error: str | None = None
    # for the timeline's slider and the history, so neither needs a replay
    iteration: int = 0
    loss: float | None = None
    point: LossPointView | None = None  # the history point a loss line added
    # predict: {"kind", "choice": [ids], "correct"} about the line ``entry`` that comes next
    prediction: PredictionRecord | None = None

    def redo(self, lab: Lab) -> None:
        """Do this logged event again on ``lab`` (a replay; a prediction changes no store)."""
        if self.op == "lr":
            lab.lr = self.lr
        elif self.op == "program":
            lab.set_program(list(self.program))
        elif self.op == "max_norm":
            lab.max_norm = self.max_norm
        elif self.op == "line":
            try:
                if self.advance:
                    lab.next()
                else:
                    lab.run_line(self.entry)
            except LineError:
                if self.ok:
                    raise
            else:
                if not self.ok:
                    raise RuntimeError(f"a replay of {self.entry} ran where it had failed")

    @property
    def moment(self) -> bool:
        return self.op == "line" and self.ok

    def to_json(self) -> EventJson:
        if self.op == "lr":
            return {"op": "lr", "lr": self.lr}
        if self.op == "program":
            return {"op": "program", "program": list(self.program)}
        if self.op == "max_norm":
            return {"op": "max_norm", "max_norm": self.max_norm}
        if self.op == "predict":
            said: EventJson = {"op": "predict", "entry": self.entry}
            if (p := self.prediction) is not None:
                said["kind"], said["choice"], said["correct"] = p["kind"], p["choice"], p["correct"]
            return said
        data: EventJson = {"op": "line", "entry": self.entry, "ok": self.ok}
        if self.advance:
            data["advance"] = True
        if not self.ok:
            data["error"] = self.error
        else:
            data["iteration"], data["loss"] = self.iteration, self.loss
            if self.point is not None:
                data["point"] = self.point
        return data

    @classmethod
    def from_json(cls, data: EventJson) -> Event:
        if data["op"] == "lr":
            return cls("lr", lr=data["lr"])
        if data["op"] == "program":
            return cls("program", program=tuple(data["program"]))
        if data["op"] == "max_norm":
            return cls("max_norm", max_norm=data["max_norm"])
        if data["op"] == "predict":
            kept: PredictionRecord = {
                "kind": data["kind"],
                "choice": data["choice"],
                "correct": data["correct"],
            }
            return cls("predict", entry=data["entry"], prediction=kept)
        return cls(
            "line",
            entry=data["entry"],
            advance=data.get("advance", False),
            ok=data["ok"],
            error=data.get("error"),
            iteration=data.get("iteration", 0),
            loss=data.get("loss"),
            point=data.get("point"),
        )


@dataclass
class Change:
    """What one action did to the log, for the database to write before the answer goes out."""

    rebased: Setup | None = None  # reset: a new start; every event and keyframe is gone
    truncate: int | None = None  # events from this sequence number on are gone
    events: list[tuple[int, Event]] = field(default_factory=list)
    # (seq, clean, state): the state captured, or already encoded (``app/log/keyframes.py``)
    keyframes: list[tuple[int, bool, LabState | bytes]] = field(default_factory=list)
    forget_before: int | None = None  # events and keyframes before this one are gone
    # where the log stands when that is not its newest event (after a rewind), or AT_END when
    # it is back there; None: as before. A line at the end writes nothing but its event.
    dropped: int = 0  # with forget_before: how many moments are gone
    base_points: list[LossPointView] = field(default_factory=list)  # and their loss points
    head: int | None = None

    def __bool__(self) -> bool:
        return any(
            v is not None for v in (self.rebased, self.truncate, self.forget_before, self.head)
        ) or bool(self.events or self.keyframes)


AT_END = -2


class KeyframeSource(Protocol):
    """Where a timeline reads its older keyframes back from (the database, as one timeline sees
    it: ``app/sessions/journal.py``)."""

    def keyframe(self, seq: int) -> LabState: ...


@dataclass
class Saved:
    """A log as the database reads it back: enough to rebuild its Timeline."""

    setup: Setup
    head: int  # AT_END: the newest event
    first: int
    dropped: int
    base_points: list[LossPointView]
    events: list[Event]
    keyframes: list[tuple[int, bool]]  # (seq, clean); the states are read when needed
