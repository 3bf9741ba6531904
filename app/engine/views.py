"""The Session JSON and its parts as types: what the engine builds, key by key, so that mypy
checks what the API promises. The web layer's pydantic ``SessionOut`` (app/web/answers.py) is
the contract; tests/web/test_views.py holds these to it key by key.

Numbers are floats here: the web layer spells NaN and the infinities as JSON strings. A
tensor's values are ``Any``: nested lists in the tensor's shape (``Tensor.tolist``).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from loop_stepper.stores.views import (
    GraphView,
    ParamStateView,
    ParamView,
)


class TogglesView(TypedDict):
    skip_zero_grad: bool
    step_first: bool


class ProgramView(TypedDict):
    """What a Session says about its program (``program.describe``)."""

    toggles: TogglesView
    program: list[str]
    code: list[str]
    preset: str | None


class BufferView(TypedDict):
    name: str
    shape: list[int]
    dtype: str
    value: Any  # nested lists in the buffer's shape


class LastView(TypedDict):
    """The line just run: the stores it read and wrote (``effects.done``)."""

    line: str
    reads: list[str]
    writes: list[str]
    warnings: list[str]
    result: float | None
    scaled: bool | None


class OptimizerView(TypedDict):
    kind: Literal["sgd", "adam"]
    momentum: float | None
    betas: list[float] | None
    weight_decay: float
    stateful: bool


class SchedulerView(TypedDict):
    kind: Literal["step", "cosine"]
    step_size: int | None
    gamma: float | None
    T_max: int | None


class ModelOptionsView(TypedDict):
    dropout: float
    batchnorm: bool
    softmax_before_loss: bool
    dtype: str


class RunningLossView(TypedDict):
    value: float
    tensor: bool
    graphs: int
    nodes: int
    saved_bytes: int


class CheckpointAt(TypedDict):
    """When ``checkpoint`` ran."""

    iteration: int
    steps: int


class CheckpointView(CheckpointAt):
    keys: list[str]


class AmpView(TypedDict):
    """Mixed precision: the autocast dtype and whether a GradScaler goes with it (also the
    setup's JSON form, where ``scaler`` is what was asked for)."""

    dtype: Literal["bfloat16", "float16"]
    scaler: bool


class ScalerView(TypedDict):
    scale: float
    growth_tracker: int
    skipped_steps: int
    found_inf: bool | None


class LossPointView(TypedDict):
    """One loss line's point of the history (made once, by ``Lab.loss``)."""

    n: int
    iteration: int
    loss: float
    param: float


class SettlingView(TypedDict):
    factor: float
    settles: bool


class OscillationView(TypedDict):
    regime: Literal["oscillates", "grows"]
    period: float | None
    omega: float | None
    amplitude: float | None
    phase: float | None


class TheoryView(TypedDict):
    eta_h: float
    curvature: float
    theta_star: float
    with_zero_grad: SettlingView
    without_zero_grad: OscillationView


class QuizRecord(TypedDict):
    """A lecture's question as the database keeps it."""

    choices: list[str]
    revealed: bool
    answer: str | None


class QuizView(QuizRecord):
    """A question on the session, as the Session shows it."""

    explanation: str | None


# a store an answer may leave out when the client holds it unchanged (``changes.py``)
HeldStore = Literal["params", "grad", "optimizer_state", "buffers", "graph", "spec", "lesson"]


class SessionView(TypedDict):
    """The Session every line answers. The engine builds all of it but the keys the layers
    above add (``moment``/``moments`` the timeline, ``id`` and ``quiz`` the web layer and the
    questions, ``prediction`` a lecture's followers only); a question hides the four keys of
    the program. One type for all those stages: a TypedDict with more keys is not one with
    fewer, and each stage adds its keys to the dict the one below made."""

    id: NotRequired[str]
    scenario: str
    lr: float
    seed: int
    toggles: NotRequired[TogglesView]
    program: NotRequired[list[str]]
    code: NotRequired[list[str]]
    preset: NotRequired[str | None]
    accumulate: int
    optimizer: OptimizerView
    cursor: int
    next_line: str
    iteration: int
    steps: int
    params: list[ParamView]
    optimizer_state: list[ParamStateView]
    max_norm: float
    scheduler: SchedulerView | None
    model_options: ModelOptionsView
    mode: Literal["train", "eval"]
    buffers: list[BufferView]
    running_loss: RunningLossView
    amp: AmpView | None
    scaler: ScalerView | None
    loss_dtype: str | None
    ckpt: CheckpointView | None
    loss: float | None
    graph: GraphView
    last: LastView | None
    losses: int
    history: list[LossPointView]
    theory: TheoryView | None
    moment: NotRequired[int]
    moments: NotRequired[int]
    quiz: NotRequired[QuizView | None]
    prediction: NotRequired[dict[str, Any] | None]  # a lecture's poll, as followers see it
    spec: NotRequired[dict[str, Any]]  # scenario "custom": the model, data and loss
    lesson: NotRequired[dict[str, Any]]  # a session on a lesson: its stops, the stop here
    version: NotRequired[str]  # the answer's name, for the next request's ?held= (changes.py)
    unchanged: NotRequired[list[HeldStore]]  # the stores left out: as in the answer held


class LineView(TypedDict):
    """The neuron's line over x in [0, 5]."""

    x: list[float]
    y: list[float]


class OutputView(TypedDict):
    """What the model computes now (``output.view``): a line, or the moons boundary."""

    kind: Literal["line", "boundary", "confusion", "scatter"]
    points: list[list[float]]
    targets: list[float]
    line: NotRequired[LineView]
    extent: NotRequired[list[float]]
    p: NotRequired[list[list[float]]]
    label: NotRequired[list[list[int]]]  # boundary of > 2 classes: the likeliest per cell
    # a spec's view on a split (confusion, scatter)
    split: NotRequired[Literal["validation", "training"]]
    classes: NotRequired[list[str]]
    matrix: NotRequired[list[list[int]]]  # rows: the true class, columns: the predicted
    accuracy: NotRequired[float]
    loss: NotRequired[float]
    true: NotRequired[list[float]]
    predicted: NotRequired[list[float]]
