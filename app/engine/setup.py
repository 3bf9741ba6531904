"""What a session is created with (Setup): everything a Lab is built from, and its JSON form.

Defined here, beside the Lab it builds, so the engine needs nothing above it; the log keeps a
Setup as the first record of a session (``app/log/records.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from app.engine.amp import AmpSpec
from app.engine.optimizers import OptimizerSpec, SchedulerSpec
from app.engine.views import AmpView, SchedulerView


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
    spec: NotRequired[dict[str, Any]]  # scenario "custom" only: the normalized spec
    lesson: NotRequired[dict[str, Any]]  # a session on a lesson: its id, title and stops


@dataclass(frozen=True)
class Setup:
    """What a session is created with: everything a Lab is built from."""

    scenario: str
    lr: float
    seed: int
    optimizer: OptimizerSpec
    accumulate: int = 1
    options: dict[str, float] = field(default_factory=dict)
    program: tuple[str, ...] = ()  # () the default loop
    max_norm: float = 1.0
    scheduler: SchedulerSpec | None = None
    dropout: float = 0.0  # moons only, like the three below
    batchnorm: bool = False
    softmax_before_loss: bool = False
    dtype: str = "float64"
    amp: AmpSpec | None = None  # float32 models only
    # scenario "custom": the model, data and loss as a normalized spec (app/spec/spec.py)
    spec: dict[str, Any] | None = None
    # a session on a prepared lesson: its walk (app/engine/lessons.py ``walk_of``)
    lesson: dict[str, Any] | None = None

    def key(self) -> str:
        """The setup as one string: equal setups, equal keys (what is shared between the
        sessions of one setup is kept under it)."""
        return json.dumps(self.to_json(), sort_keys=True)

    def to_json(self) -> SetupJson:
        out = self._json()
        if self.spec is not None:  # absent for the scenarios: their logs and keys as before
            out["spec"] = self.spec
        if self.lesson is not None:
            out["lesson"] = self.lesson
        return out

    def _json(self) -> SetupJson:
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
            data.get("spec"),
            data.get("lesson"),
        )
