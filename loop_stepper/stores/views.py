"""The stores' shapes: a parameter, its ``.grad``, a tensor's summary and page, the autograd
graph, the optimizer state, as the page, the widget and the server's Session draw them alike
(``draw.view``). Numbers are floats; a tensor's values are ``Any``: nested lists in the tensor's
shape (``Tensor.tolist``).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict


class HistogramView(TypedDict):
    """``numpy.histogram`` of the finite values, 16 bins (17 edges)."""

    edges: list[float]
    counts: list[int]
    nonfinite: int


class HeatMapView(TypedDict):
    """Block means of the tensor seen as ``shape`` (rows x columns): cell (i, j) is the mean
    of rows ``rows[i]`` up to the next start (or the end), columns likewise."""

    shape: list[int]
    rows: list[int]
    cols: list[int]
    cells: list[list[float]]


class TensorSummaryView(TypedDict):
    """A tensor of more than 256 elements, as the Session sends it (``tensors.summary``)."""

    summary: Literal[True]
    shape: list[int]
    numel: int
    min: float
    max: float
    mean: float
    std: float
    norm: float
    histogram: HistogramView
    heatmap: HeatMapView


class TensorPageView(TypedDict):
    """A page of a tensor's exact elements (``stores.page``)."""

    store: str
    name: str
    key: str | None
    shape: list[int]
    dtype: str
    numel: int
    start: int
    stop: int
    values: list[Any] | None  # None: a .grad that is None


class ParamView(TypedDict):
    name: str
    shape: list[int]
    dtype: str
    # nested lists in the tensor's shape, or its summary past 256 elements
    value: Any | TensorSummaryView
    grad: Any | TensorSummaryView | None  # like value, or None when .grad is None


class NodeView(TypedDict):
    id: str
    label: str
    dtype: str | None


class EdgeView(TypedDict):
    source: str
    target: str


class GraphView(TypedDict):
    status: Literal["empty", "built", "freed"]
    nodes: list[NodeView]
    edges: list[EdgeView]
    out_dtype: str | None


class ParamStateView(TypedDict):
    name: str
    # what optimizer.state holds: tensors as lists (or their summary past 256 elements), numbers
    state: dict[str, Any | TensorSummaryView]
