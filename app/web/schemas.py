"""The JSON contract: request bodies (strict, closed) and the Session every line returns."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..engine import scenarios as catalogue
from ..engine.program import MAX_PROGRAM

Scenario = Literal["neuron", "moons", "parabola"]
# one entry of a loop program, exactly the Python it runs
Entry = Literal[
    "forward",
    "loss",
    "zero_grad",
    "zero_grad(set_to_none=False)",
    "backward",
    "backward(retain_graph=True)",
    "step",
    "clip_grad_norm",
    "scheduler_step",
    "train",
    "eval",
    "log_item",
    "log_tensor",
    "checkpoint",
    "checkpoint(model_only=True)",
    "resume",
    "scaler_update",
]
Store = Literal[
    "params",
    "data",
    "graph",
    "grad",
    "loss",
    "optimizer_state",
    "lr",
    "mode",
    "buffers",
    "running_loss",
    "ckpt",
    "scaler",
]
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


class CreateSession(Body):
    scenario: Scenario = "neuron"
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
        allowed = catalogue.info(self.scenario).accumulate
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


class PresetOut(BaseModel):
    name: str
    title: str
    program: list[Entry]
    explanation: str
    setup: dict[str, Any] = Field(description="what a session needs for the bug to show")


class Toggles(BaseModel):
    skip_zero_grad: bool
    step_first: bool


class Param(BaseModel):
    name: str
    shape: list[int]
    dtype: str
    value: Any = Field(description="nested lists in the tensor's shape")
    grad: Any = Field(description="like value, or null when .grad is None")


class Node(BaseModel):
    id: str
    label: str
    dtype: str | None = Field(None, description="the dtype of the tensor its forward op made")


class Edge(BaseModel):
    source: str = Field(description="a node whose grad_fn lists ...")
    target: str = Field(description="... this node among its next_functions")


class Graph(BaseModel):
    status: Literal["empty", "built", "freed"]
    nodes: list[Node]
    edges: list[Edge]
    out_dtype: str | None = Field(None, description="the dtype of out (null before forward)")


class Last(BaseModel):
    line: Entry
    reads: list[Store]
    writes: list[Store]
    warnings: list[str] = Field(description="PyTorch's warnings raised by the line, its words")
    result: Number | None = Field(None, description="what the line returned (clip: the norm)")
    scaled: bool | None = Field(None, description="clip_grad_norm: whether it scaled .grad")


class SchedulerOut(BaseModel):
    kind: Literal["step", "cosine"]
    step_size: int | None = None
    gamma: float | None = None
    T_max: int | None = None


class ModelOptions(BaseModel):
    dropout: float
    batchnorm: bool
    softmax_before_loss: bool
    dtype: str


class Buffer(BaseModel):
    name: str
    shape: list[int]
    dtype: str
    value: Any = Field(description="nested lists in the buffer's shape")


class RunningLoss(BaseModel):
    value: Number = Field(description="running_loss (a float, or the tensor's value)")
    tensor: bool = Field(description="a tensor: it keeps the graphs of the losses added in")
    graphs: int = Field(description="loss graphs it keeps alive")
    nodes: int = Field(description="autograd nodes it keeps alive")
    saved_bytes: int = Field(description="bytes of their saved tensors not yet freed")


class CheckpointOut(BaseModel):
    keys: list[Literal["model", "optimizer", "scaler"]]
    iteration: int = Field(description="the iteration when it was taken")
    steps: int


class AmpOut(BaseModel):
    dtype: Literal["bfloat16", "float16"]
    scaler: bool = Field(description="backward and step go through torch.amp.GradScaler")


class ScalerOut(BaseModel):
    scale: float = Field(description="what scaler.scale(loss) multiplies by (2**16 at first)")
    growth_tracker: int = Field(description="good steps in a row since the scale last changed")
    skipped_steps: int = Field(description="scaler.step calls that found inf/NaN and skipped")
    found_inf: bool | None = Field(
        description="whether this iteration's unscale found inf/NaN (null until it ran)"
    )


class LossPoint(BaseModel):
    n: int = Field(description="the loss line's number: 0 for the first since the last reset")
    iteration: int
    loss: Number
    param: Number = Field(description="the first parameter's first value when loss ran")


class OptimizerOut(BaseModel):
    kind: Literal["sgd", "adam"]
    momentum: float | None = None
    betas: list[float] | None = None
    weight_decay: float
    stateful: bool = Field(description="step keeps state between calls (plain SGD does not)")


class ParamState(BaseModel):
    name: str
    state: dict[str, Any] = Field(description="what optimizer.state holds: tensors as lists")


class Oscillation(BaseModel):
    regime: Literal["oscillates", "grows"]
    period: float | None
    omega: float | None
    amplitude: float | None
    phase: float | None


class Settling(BaseModel):
    factor: float
    settles: bool


class Theory(BaseModel):
    eta_h: float
    curvature: float
    theta_star: float
    with_zero_grad: Settling
    without_zero_grad: Oscillation


class QuizOut(BaseModel):
    choices: list[str]
    revealed: bool
    answer: str | None = Field(description="the right preset, once revealed")
    explanation: str | None


class Session(BaseModel):
    id: str
    scenario: Scenario
    lr: float
    seed: int
    # the four below are absent while a question hides the program (lectures, self-study)
    toggles: Toggles | None = None
    program: list[Entry] | None = None
    code: list[str] | None = Field(None, description="the Python of each program entry")
    preset: str | None = None
    cursor: int
    next_line: Entry
    iteration: int
    steps: int = Field(description="optimizer.step calls so far")
    accumulate: int
    optimizer: OptimizerOut
    params: list[Param]
    optimizer_state: list[ParamState]
    max_norm: float
    scheduler: SchedulerOut | None
    model_options: ModelOptions
    mode: Literal["train", "eval"]
    buffers: list[Buffer] = Field(description="model buffers (BatchNorm's running statistics)")
    running_loss: RunningLoss
    ckpt: CheckpointOut | None
    amp: AmpOut | None = Field(None, description="mixed precision, if any")
    scaler: ScalerOut | None = Field(None, description="the GradScaler's store (amp float16)")
    loss: Number | None
    loss_dtype: str | None = Field(None, description="the loss tensor's dtype (null before one)")
    graph: Graph
    last: Last | None
    losses: int = Field(description="loss lines run since the start or the last reset")
    history: list[LossPoint] = Field(
        description="the newest 1000 loss points, or with ?since=n only those numbered n or later"
    )
    theory: Theory | None = Field(description="parabola only: the formal statement's numbers")
    moment: int = Field(description="where the session stands: 0 is the start, n after line n")
    moments: int = Field(description="the newest moment (more than moment after stepping back)")
    quiz: QuizOut | None = Field(None, description="a question on this session, if any")


class Problem(BaseModel):
    detail: str
    line: Entry | None = None


class Output(BaseModel):
    kind: Literal["line", "boundary"]
    points: list[list[float]]
    targets: list[float]
    line: dict[str, list[Number]] | None = Field(None, description="neuron: x and w·x + b")
    extent: list[float] | None = Field(None, description="moons: x0, x1, y0, y1 of the grid")
    p: list[list[Number]] | None = Field(None, description="moons: P(class 1), rows bottom-up")
