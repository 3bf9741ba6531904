"""What the API answers: the Session every line returns, its stores, and the output view."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from app.engine.views import HeldStore
from app.web.schemas import Entry, Number, Scenario, Store


class TogglesOut(BaseModel):
    skip_zero_grad: bool
    step_first: bool


class Histogram(BaseModel):
    edges: list[Number] = Field(description="numpy.histogram's 17 edges of the finite values")
    counts: list[int] = Field(description="the finite values in each of the 16 bins")
    nonfinite: int = Field(description="values that are NaN or infinite (in no bin)")


class HeatMap(BaseModel):
    shape: list[int] = Field(
        description="the tensor as rows x columns: a vector is one row, any other rank its "
        "first dimension x the rest flattened"
    )
    rows: list[int] = Field(description="where each block of rows starts (i*rows // n)")
    cols: list[int] = Field(description="where each block of columns starts")
    cells: list[list[Number]] = Field(description="each block's mean, at most 32 x 32")


class TensorSummary(BaseModel):
    """A tensor of more than 256 elements: its numbers in float64, its elements paged by
    GET /api/sessions/{id}/tensor."""

    summary: Literal[True]
    shape: list[int]
    numel: int
    min: Number
    max: Number
    mean: Number
    std: Number = Field(description="torch.std: Bessel's correction (n - 1)")
    norm: Number = Field(description="the L2 norm of all elements")
    histogram: Histogram
    heatmap: HeatMap


class TensorPage(BaseModel):
    store: Literal["params", "grad", "state"]
    name: str
    key: str | None = Field(description="state: the optimizer state's key (exp_avg...)")
    shape: list[int]
    dtype: str
    numel: int
    start: int
    stop: int
    values: list[Any] | None = Field(
        description="elements start to stop - 1 of the tensor flattened row-major, exactly; "
        "null: a .grad that is None"
    )


class Param(BaseModel):
    name: str
    shape: list[int]
    dtype: str
    value: Any | TensorSummary = Field(
        None,
        description="nested lists in the tensor's shape, or its summary past 256 elements; "
        'absent when "params" is in the answer\'s unchanged',
    )
    grad: Any | TensorSummary | None = Field(
        None,
        description='like value, or null when .grad is None; absent when "grad" is in the '
        "answer's unchanged",
    )


class Node(BaseModel):
    id: str
    label: str
    dtype: str | None = Field(None, description="the dtype of the tensor its forward op made")


class Edge(BaseModel):
    source: str = Field(description="a node whose grad_fn lists ...")
    target: str = Field(description="... this node among its next_functions")


class GraphOut(BaseModel):
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
    state: dict[str, Any | TensorSummary] = Field(
        description="what optimizer.state holds: tensors as lists (a summary past 256 elements)"
    )


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


UNCHANGED = "absent when named in unchanged (as in the answer held)"


class SessionOut(BaseModel):
    id: str
    scenario: Scenario | Literal["custom"]
    lr: float
    seed: int
    # the four below are absent while a question hides the program (lectures, self-study)
    toggles: TogglesOut | None = None
    program: list[Entry] | None = None
    code: list[str] | None = Field(None, description="the Python of each program entry")
    preset: str | None = None
    cursor: int
    next_line: Entry
    iteration: int
    steps: int = Field(description="optimizer.step calls so far")
    accumulate: int
    optimizer: OptimizerOut
    params: list[Param] | None = Field(
        None,
        description='absent when both "params" and "grad" are in unchanged; with one of them, '
        "each entry without that field",
    )
    optimizer_state: list[ParamState] | None = Field(None, description=UNCHANGED)
    max_norm: float
    scheduler: SchedulerOut | None
    model_options: ModelOptions
    mode: Literal["train", "eval"]
    buffers: list[Buffer] | None = Field(
        None, description=f"model buffers (BatchNorm's running statistics); {UNCHANGED}"
    )
    running_loss: RunningLoss
    ckpt: CheckpointOut | None
    amp: AmpOut | None = Field(None, description="mixed precision, if any")
    scaler: ScalerOut | None = Field(None, description="the GradScaler's store (amp float16)")
    loss: Number | None
    loss_dtype: str | None = Field(None, description="the loss tensor's dtype (null before one)")
    graph: GraphOut | None = Field(None, description=UNCHANGED)
    last: Last | None
    losses: int = Field(description="loss lines run since the start or the last reset")
    history: list[LossPoint] = Field(
        description="the newest 1000 loss points, or with ?since=n only those numbered n or later"
    )
    theory: Theory | None = Field(description="parabola only: the formal statement's numbers")
    moment: int = Field(description="where the session stands: 0 is the start, n after line n")
    moments: int = Field(description="the newest moment (more than moment after stepping back)")
    quiz: QuizOut | None = Field(None, description="a question on this session, if any")
    spec: dict[str, Any] | None = Field(
        None,
        description=f'scenario "custom": the model, data and loss it was created with; {UNCHANGED}',
    )
    lesson: dict[str, Any] | None = Field(
        None,
        description="a session on a lesson: {id, title, stops: [{at, title}], stop, note, "
        f"question, vote}}; stop, note and question set at a stop's moment; {UNCHANGED}",
    )
    version: str | None = Field(
        None,
        description="this answer's name: send it back as ?held= and the next answer leaves "
        "out what is unchanged since this one",
    )
    unchanged: list[HeldStore] | None = Field(
        None,
        description="with ?held=V: the stores left out because they equal those of answer V "
        '("params": each entry\'s value, "grad": each entry\'s grad; the others: keys of the '
        "Session); absent when the whole Session is sent",
    )


class Problem(BaseModel):
    detail: str
    line: Entry | None = None


class Output(BaseModel):
    kind: Literal["line", "boundary", "confusion", "scatter"]
    points: list[list[float]]
    targets: list[float]
    line: dict[str, list[Number]] | None = Field(None, description="neuron: x and w*x + b")
    extent: list[float] | None = Field(None, description="moons: x0, x1, y0, y1 of the grid")
    p: list[list[Number]] | None = Field(None, description="moons: P(class 1), rows bottom-up")
    label: list[list[int]] | None = Field(
        None, description="boundary of more than 2 classes: the likeliest class per cell (p its P)"
    )
    split: Literal["validation", "training"] | None = Field(
        None, description="confusion, scatter: the split the view is on"
    )
    classes: list[str] | None = Field(None, description="confusion: the class names in order")
    matrix: list[list[int]] | None = Field(
        None, description="confusion: rows the true class, columns the predicted"
    )
    accuracy: float | None = None
    loss: Number | None = Field(None, description="confusion, scatter: the loss on the split")
    true: list[Number] | None = Field(None, description="scatter: the targets")
    predicted: list[Number] | None = Field(None, description="scatter: the model's outputs")


# Predict first (issue 17): the question about the line at the cursor, asked before it runs
Kind = Literal["writes", "grad", "loss", "raises"]
ChoiceValue = Number | Literal["error"] | None


class ChoiceOut(BaseModel):
    id: str
    text: str
    value: ChoiceValue = Field(
        None, description='grad questions: the number, null (None) or "error" (it raises)'
    )


class VoterOut(BaseModel):
    voter: str = Field(description="send it with the next answer to replace this one")


class QuestionOut(BaseModel):
    line: Entry = Field(description="the program entry at the cursor, before it runs")
    kind: Kind
    prompt: str
    choices: list[ChoiceOut]
    multiple: bool = Field(description="true: choose a list of ids (writes)")
    param: str | None = Field(None, description="grad: the parameter asked about")
    index: int | None = Field(None, description="grad: the flat index of its element")
