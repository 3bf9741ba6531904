"""The log's records: what a session was created with (Setup), what was done to it (Event), what one
action changed in the log (Change) and a log as the database reads it back (Saved).

Plain data with their JSON forms; the timeline writes them, the database keeps them, the export
reads them. Imports the engine only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, NotRequired, Protocol, TypedDict

from app.engine import Lab, LabState, LineError
from app.engine.amp import AmpSpec
from app.engine.optimizers import OptimizerSpec, SchedulerSpec
from app.engine.views import AmpView, LossPointView, SchedulerView


class OptimizerJson(TypedDict):
    kind: Literal["sgd", "adam"]
    momentum: NotRequired[float]  # sgd
    betas: NotRequired[list[float]]  # adam
    weight_decay: float


class SetupJson(TypedDict):
    """A Setup as the database keeps it (and the export reads it)."""

    scenario: str
    lr: float
    seed: int
    optimizer: OptimizerJson
    accumulate: int
    options: dict[str, float]
    program: list[str]
    # logs stored before these existed lack them
    max_norm: NotRequired[float]
    scheduler: NotRequired[SchedulerView | None]
    dropout: NotRequired[float]
    batchnorm: NotRequired[bool]
    softmax_before_loss: NotRequired[bool]
    dtype: NotRequired[str]
    amp: NotRequired[AmpView | None]


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


@dataclass(frozen=True)
class Setup:
    """What a session is created with: everything a Lab is built from."""

    scenario: str
    lr: float
    seed: int
    optimizer: OptimizerSpec
    accumulate: int = 1
    options: dict[str, float] = field(default_factory=dict)
    program: tuple[str, ...] = ()
    max_norm: float = 1.0
    scheduler: SchedulerSpec | None = None
    dropout: float = 0.0  # moons only, like the three below
    batchnorm: bool = False
    softmax_before_loss: bool = False
    dtype: str = "float64"
    amp: AmpSpec | None = None  # float32 models only

    def build(self) -> Lab:
        lab = Lab(
            self.scenario,
            self.lr,
            self.seed,
            optimizer=self.optimizer,
            accumulate=self.accumulate,
            options=self.options,
            max_norm=self.max_norm,
            scheduler=self.scheduler,
            dropout=self.dropout,
            batchnorm=self.batchnorm,
            softmax_before_loss=self.softmax_before_loss,
            dtype=self.dtype,
            amp=self.amp,
        )
        if self.program:
            lab.set_program(list(self.program))
        return lab

    def key(self) -> str:
        """The setup as one string: equal setups, equal keys (what is shared between the
        sessions of one setup is kept under it)."""
        return json.dumps(self.to_json(), sort_keys=True)

    def to_json(self) -> SetupJson:
        o = self.optimizer
        optimizer: OptimizerJson = (
            {"kind": "adam", "betas": list(o.betas), "weight_decay": o.weight_decay}
            if o.kind == "adam"
            else {"kind": "sgd", "momentum": o.momentum, "weight_decay": o.weight_decay}
        )
        return {
            "scenario": self.scenario,
            "lr": self.lr,
            "seed": self.seed,
            "optimizer": optimizer,
            "accumulate": self.accumulate,
            "options": dict(self.options),
            "program": list(self.program),
            "max_norm": self.max_norm,
            "scheduler": None if self.scheduler is None else self.scheduler.describe(),
            "dropout": self.dropout,
            "batchnorm": self.batchnorm,
            "softmax_before_loss": self.softmax_before_loss,
            "dtype": self.dtype,
            "amp": None if self.amp is None else self.amp.to_json(),
        }

    @classmethod
    def from_json(cls, data: SetupJson) -> Setup:
        o = data["optimizer"]
        if o["kind"] == "adam":
            b1, b2 = o["betas"]  # a JSON list: the spec holds the pair
            spec = OptimizerSpec("adam", weight_decay=o["weight_decay"], betas=(b1, b2))
        else:
            spec = OptimizerSpec("sgd", momentum=o["momentum"], weight_decay=o["weight_decay"])
        return cls(
            data["scenario"],
            data["lr"],
            data["seed"],
            spec,
            data["accumulate"],
            dict(data["options"]),
            tuple(data["program"]),
            # logs stored before these existed have the defaults
            float(data.get("max_norm", 1.0)),
            SchedulerSpec.read(data.get("scheduler")),
            float(data.get("dropout", 0.0)),
            bool(data.get("batchnorm", False)),
            bool(data.get("softmax_before_loss", False)),
            str(data.get("dtype", "float64")),
            AmpSpec.read(data.get("amp")),
        )


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
