"""The JSON contract: request bodies (strict, closed) and the Session every line returns."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Scenario = Literal["neuron", "moons"]
Line = Literal["forward", "loss", "zero_grad", "backward", "step"]
Store = Literal["params", "data", "graph", "grad", "loss"]
# lr in (0, 100]; NaN and Infinity fail the bounds and allow_inf_nan
LR = Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
# a number PyTorch holds: finite, or "NaN" / "Infinity" / "-Infinity"
Number = float | Literal["NaN", "Infinity", "-Infinity"]


class Body(BaseModel):
    # no coercion ("1" is not 1, 1 is not true) and no unknown keys: typos fail loudly
    model_config = ConfigDict(strict=True, extra="forbid")


class CreateSession(Body):
    scenario: Scenario = "neuron"
    lr: LR | None = None
    seed: Seed | None = None
    skip_zero_grad: bool = False
    step_first: bool = False


class PatchSession(Body):
    lr: LR | None = None
    skip_zero_grad: bool | None = None
    step_first: bool | None = None


class ZeroGradBody(Body):
    set_to_none: bool = True


class BackwardBody(Body):
    retain_graph: bool = False


class RunBody(Body):
    iterations: int = Field(ge=1, le=1000)


class ScenarioOut(BaseModel):
    name: str
    description: str
    default_lr: float
    default_seed: int
    batch_size: int
    train_size: int


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


class Edge(BaseModel):
    source: str = Field(description="a node whose grad_fn lists ...")
    target: str = Field(description="... this node among its next_functions")


class Graph(BaseModel):
    status: Literal["empty", "built", "freed"]
    nodes: list[Node]
    edges: list[Edge]


class Last(BaseModel):
    line: Line
    reads: list[Store]
    writes: list[Store]


class LossPoint(BaseModel):
    iteration: int
    loss: Number


class Session(BaseModel):
    id: str
    scenario: Scenario
    lr: float
    seed: int
    toggles: Toggles
    program: list[Line]
    cursor: int
    next_line: Line
    iteration: int
    params: list[Param]
    loss: Number | None
    graph: Graph
    last: Last | None
    history: list[LossPoint]


class Problem(BaseModel):
    detail: str
    line: Line | None = None


class Output(BaseModel):
    kind: Literal["line", "boundary"]
    points: list[list[float]]
    targets: list[float]
    line: dict[str, list[Number]] | None = Field(None, description="neuron: x and w·x + b")
    extent: list[float] | None = Field(None, description="moons: x0, x1, y0, y1 of the grid")
    p: list[list[Number]] | None = Field(None, description="moons: P(class 1), rows bottom-up")
