"""The JSON contract: request bodies (strict, closed) and the Session every line returns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.engine import scenarios
from app.engine.effects import STORES
from app.engine.entries import ENTRIES
from app.engine.program import MAX_PROGRAM

Scenario = Literal["neuron", "moons", "parabola"]
# one entry of a loop program (its name in the table of entries, app/engine/entries.py)
if TYPE_CHECKING:
    Entry = str
else:  # the enum the schema lists is the table's names, in its order
    Entry = Literal[tuple(ENTRIES)]
if TYPE_CHECKING:
    Store = str
else:  # the lesson's stores, as the engine names them (app/engine/effects.py)
    Store = Literal[tuple(STORES)]
# lr in (0, 100]; NaN and Infinity fail the bounds and allow_inf_nan
LR = Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)]
MaxNorm = Annotated[float, Field(gt=0, le=1000, allow_inf_nan=False)]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
# a number PyTorch holds: finite, or "NaN" / "Infinity" / "-Infinity"
Number = float | Literal["NaN", "Infinity", "-Infinity"]


class Body(BaseModel):
    # no coercion ("1" is not 1, 1 is not true) and no unknown keys: typos fail loudly
    model_config = ConfigDict(strict=True, extra="forbid")


Fraction = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]


class SGDSpec(Body):
    kind: Literal["sgd"]
    momentum: Fraction = 0.0
    weight_decay: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0


class AdamSpec(Body):
    kind: Literal["adam"]
    betas: Annotated[list[Fraction], Field(min_length=2, max_length=2)] = [0.9, 0.999]
    weight_decay: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0


OptimizerIn = Annotated[SGDSpec | AdamSpec, Field(discriminator="kind")]


class StepLRSpec(Body):
    kind: Literal["step"]
    step_size: int = Field(ge=1, le=10_000)
    gamma: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


class CosineSpec(Body):
    kind: Literal["cosine"]
    T_max: int = Field(ge=1, le=10_000)


SchedulerIn = Annotated[StepLRSpec | CosineSpec, Field(discriminator="kind")]
Program = Annotated[list[Entry], Field(min_length=1, max_length=MAX_PROGRAM)]


SpecDict = dict[str, Any]


class CreateSession(Body):
    scenario: Scenario = "neuron"
    # your own model and data (issue 28): checked deeply by the engine (app/spec/spec.py)
    model: Annotated[list[SpecDict], Field(min_length=1, max_length=256)] | None = Field(
        None, description="the layers, each {type, ...its keyword arguments}; not with scenario"
    )
    data: SpecDict | None = Field(
        None, description="{kind: sklearn, name, args} | {kind: points, X, y} | {kind: csv, …}"
    )
    task: Literal["regression", "classification"] | None = Field(
        None, description="inferred from the target when absent"
    )
    loss: SpecDict | None = Field(None, description="{type: MSELoss | CrossEntropyLoss | …}")
    validation: Annotated[float, Field(ge=0, lt=1)] | None = Field(
        None, description="the fraction held out (0.25)"
    )
    batch_size: Annotated[int, Field(ge=1)] | None = Field(
        None, description="rows per batch (the training rows up to 32)"
    )
    standardize: bool | None = Field(None, description="features to mean 0, std 1 (false)")
    shuffle: bool | None = Field(None, description="a new order each epoch (true)")
    lr: LR | None = None
    seed: Seed | None = None
    skip_zero_grad: bool = False
    step_first: bool = False
    optimizer: OptimizerIn | None = None
    accumulate: int = Field(1, description="micro-batches per step: neuron 1, 2, 4; moons 1-8")
    curvature: Annotated[float, Field(gt=0, le=1000, allow_inf_nan=False)] | None = Field(
        None, description="parabola only: h (15)"
    )
    theta_star: Annotated[float, Field(ge=-100, le=100, allow_inf_nan=False)] | None = Field(
        None, description="parabola only: where the minimum is (1.4)"
    )
    program: Program | None = Field(None, description="the loop program; not with the toggles")
    max_norm: MaxNorm = Field(1.0, description="clip_grad_norm's max_norm")
    scheduler: SchedulerIn | None = Field(
        None, description="StepLR {kind: step, step_size, gamma} or {kind: cosine, T_max}"
    )
    dropout: Fraction = Field(0.0, description="moons only: nn.Dropout(p) after each hidden ReLU")
    batchnorm: bool = Field(False, description="moons only: BatchNorm1d after each hidden Linear")
    softmax_before_loss: bool = Field(
        False, description="moons only: loss_fn(out.softmax(dim=1), y)"
    )
    dtype: Literal["float64", "float32"] = Field("float64", description="moons only")
    amp: Literal["bfloat16", "float16"] | None = Field(
        None, description='forward and loss under torch.autocast("cpu", dtype=…): float32 models'
    )
    grad_scaler: bool | None = Field(
        None, description="amp float16 only: with torch.amp.GradScaler (default true)"
    )
    snapshot: Annotated[str, Field(min_length=1, max_length=100)] | None = Field(
        None, description="open a shared moment: a snapshot token, alone (it brings its setup)"
    )
    quiz: bool = Field(False, description="self-study: a random bug preset, its program hidden")

    @model_validator(mode="after")
    def fits_the_scenario(self) -> Self:
        if self.snapshot is not None and self.model_fields_set - {"snapshot"}:
            raise ValueError("a snapshot brings its own setup: send it alone")
        if self.model is not None or self.data is not None:
            return self._fits_a_spec()
        spec_only = ("task", "loss", "validation", "batch_size", "standardize", "shuffle")
        if self.model_fields_set & set(spec_only):
            raise ValueError(f"{', '.join(spec_only)}: with a model only")
        allowed = scenarios.info(self.scenario).accumulate
        if self.accumulate not in allowed:
            raise ValueError(f"accumulate must be one of {list(allowed)} for {self.scenario}")
        if self.scenario != "parabola" and (self.curvature, self.theta_star) != (None, None):
            raise ValueError("curvature and theta_star: only the parabola scenario takes these")
        if self.program is not None and (self.skip_zero_grad or self.step_first):
            raise ValueError("send either a program or toggles, not both")
        moons_only = (self.dropout, self.batchnorm, self.softmax_before_loss, self.dtype)
        if self.scenario != "moons" and moons_only != (0.0, False, False, "float64"):
            raise ValueError(
                "dropout, batchnorm, softmax_before_loss and dtype: only moons takes these"
            )
        if self.amp is not None and self.scenario == "moons" and self.dtype == "float64":
            raise ValueError(
                'amp needs a float32 model: this moons is float64 (send "dtype": "float32")'
            )
        if self.amp is not None and self.scenario == "parabola":
            raise ValueError("amp needs a float32 model: the parabola is float64")
        if self.grad_scaler is not None and self.amp != "float16":
            raise ValueError('grad_scaler goes with "amp": "float16" only')
        if self.quiz and self.amp is not None:
            raise ValueError("a quiz runs without amp")
        if self.quiz and (self.program or self.skip_zero_grad or self.step_first):
            raise ValueError("a quiz picks its own program: send no program or toggles")
        if self.quiz and self.accumulate != 1:
            raise ValueError("a quiz runs without accumulation: accumulate must be 1")
        return self

    def _fits_a_spec(self) -> Self:
        if self.model is None or self.data is None:
            raise ValueError("a model and its data go together")
        if "scenario" in self.model_fields_set:
            raise ValueError("send either a scenario or a model, not both")
        if not 1 <= self.accumulate <= 8:
            raise ValueError("accumulate must be from 1 to 8")
        others = (self.curvature, self.theta_star, self.dropout, self.batchnorm)
        if others != (None, None, 0.0, False) or self.softmax_before_loss:
            raise ValueError(
                "curvature, theta_star, dropout, batchnorm and softmax_before_loss belong to "
                "the scenarios: a model says them in its layers and loss"
            )
        if self.amp is not None and self.spec_dtype == "float64":
            raise ValueError("amp needs a float32 model: this one is float64")
        if self.grad_scaler is not None and self.amp != "float16":
            raise ValueError('grad_scaler goes with "amp": "float16" only')
        if self.program is not None and (self.skip_zero_grad or self.step_first):
            raise ValueError("send either a program or toggles, not both")
        if self.quiz:
            raise ValueError("a quiz runs on the scenarios")
        return self

    @property
    def spec_dtype(self) -> str:
        """A model's dtype: float32 unless sent (the scenarios' default is float64)."""
        return self.dtype if "dtype" in self.model_fields_set else "float32"

    def spec(self) -> dict[str, Any]:
        """The spec's fields as sent (the engine fills in the rest)."""
        keys = ("model", "data", "task", "loss", "validation", "batch_size", "standardize")
        return {k: getattr(self, k) for k in (*keys, "shuffle") if getattr(self, k) is not None}


class PatchSession(Body):
    lr: LR | None = None
    max_norm: MaxNorm | None = None
    skip_zero_grad: bool | None = None
    step_first: bool | None = None
    program: Program | None = Field(None, description="the loop program; not with the toggles")

    @model_validator(mode="after")
    def program_or_toggles(self) -> Self:
        if self.program is not None and (self.skip_zero_grad, self.step_first) != (None, None):
            raise ValueError("send either a program or toggles, not both")
        return self


class ZeroGradBody(Body):
    set_to_none: bool = True


class BackwardBody(Body):
    retain_graph: bool = False


class RunBody(Body):
    iterations: int = Field(ge=1, le=1000)


class RewindBody(Body):
    to: int = Field(ge=0, le=2**53, description="the moment: 0 is the start, n after line n")


class MomentOut(BaseModel):
    n: int
    line: Entry | None = Field(description="the line that ran (null for moment 0)")
    iteration: int
    loss: Number | None = Field(description="the session's loss after that line")
    predicted: bool | None = Field(
        description="predict first: whether the prediction about this line was right (null: "
        "none was made)"
    )


class TimelineOut(BaseModel):
    moment: int = Field(description="where the session stands")
    moments: list[MomentOut] = Field(description="every moment that can be rewound to")


class SnapshotOut(BaseModel):
    snapshot: str = Field(description="the token: POST /api/sessions {snapshot} opens it")
    url: str = Field(description="the page at that moment")


class ScenarioOut(BaseModel):
    name: str
    title: str
    description: str
    default_lr: float
    default_seed: int
    batch_size: int
    train_size: int
    accumulate: list[int]
    spec: dict[str, Any] | None = Field(
        None, description="the POST /api/sessions body that makes it as a model (bit for bit)"
    )


class PresetOut(BaseModel):
    name: str
    title: str
    program: list[Entry]
    explanation: str
    setup: dict[str, Any] = Field(description="what a session needs for the bug to show")


# a follower who answers a question: the id the server gave it (kept by the page)
Voter = Annotated[str, Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
