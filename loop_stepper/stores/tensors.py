"""A tensor as the Session sends it: its elements (up to ``LARGEST_SHOWN``) or a summary, and
its exact elements a page at a time (``stores.page``, ``GET /api/sessions/{id}/tensor``).

The three scenarios' tensors are at most 256 elements (moons' 16 x 16 weight), so they are
always sent whole. A bigger one (a model of one's own) would make every click's answer
grow with the model, so it is sent as a summary of fixed size instead, and a page asks for
the elements it wants to show.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from loop_stepper.stores.views import HeatMapView, HistogramView, TensorSummaryView

LARGEST_SHOWN = 256  # elements a tensor may have to be sent element by element
HISTOGRAM_BINS = 16
HEAT_MAP_SIDE = 32  # at most 32 x 32 cells
CELL_DIGITS = 4  # a heat map cell's significant digits
PAGE_LIMIT = 4096  # elements a page of ``page`` may hold


class UnknownTensor(LookupError):
    """No tensor of that name in that store (a 404)."""


class BadRange(ValueError):
    """A page outside the tensor or larger than ``PAGE_LIMIT`` (a 422); ``loc`` names the
    query parameter at fault."""

    def __init__(self, loc: list[str], message: str) -> None:
        super().__init__(message)
        self.loc = loc


# a big tensor's summary by the tensor, kept while its version (bumped by every in-place
# change: a step, a backward adding in, a restore) is the same: a click changes one store at
# most, so the others' summaries are not made again. By id with a weak reference to check it
# is the same tensor (a tensor's == is elementwise: no WeakKeyDictionary); a dead tensor's
# entry goes with it. Read-only: every answer shares it.
_SUMMARIES: dict[int, tuple[weakref.ref[torch.Tensor], int, TensorSummaryView, bytes]] = {}
_SUMMARIES_LOCK = threading.Lock()
_SUMMARIES_KEPT = 4096
# and by content: a class on one setup and seed holds the same tensors at the same moments (each
# session a copy of one seeded model, PyTorch deterministic on the CPU), so each one is
# summarised once for the whole class. Keyed by a 128-bit digest of its dtype, shape and bytes
# (a collision: 2**-64 after 2**32 summaries); the newest ``_BY_CONTENT_KEPT`` kept.
_BY_CONTENT: OrderedDict[bytes, TensorSummaryView] = OrderedDict()
_BY_CONTENT_KEPT = 2048


def shown(tensor: torch.Tensor) -> Any:
    """``tensor`` as the Session sends it: nested lists in its shape (``Tensor.tolist``), or
    its summary when it has more than ``LARGEST_SHOWN`` elements."""
    if tensor.numel() <= LARGEST_SHOWN:
        return tensor.detach().tolist()
    return _kept(tensor)[0]


def fingerprint(tensor: torch.Tensor) -> bytes:
    """The tensor's content, compactly and exactly (what ``changes.py`` compares an answer's
    stores by, and keeps for the answers a client may hold): its bytes when it is sent element
    by element, else its digest, the key its summary is kept under (made once per change)."""
    if tensor.numel() <= LARGEST_SHOWN:
        t = tensor.detach()
        if t.dtype in _NUMPY:
            return t.numpy().tobytes()
        return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return _kept(tensor)[1]


def forget(tensor: torch.Tensor) -> None:
    """Drop the kept summary of ``tensor``: its content changed without a version (through
    ``.data``, which has a version counter of its own); the next look makes it again."""
    with _SUMMARIES_LOCK:
        kept = _SUMMARIES.get(id(tensor))
        if kept is not None and kept[0]() is tensor:
            del _SUMMARIES[id(tensor)]


def _kept(tensor: torch.Tensor) -> tuple[TensorSummaryView, bytes]:
    """A big tensor's summary and digest: kept while its version is the same, else made (the
    summary found by its content when an equal tensor's was made) and kept."""
    key, version = id(tensor), tensor._version
    with _SUMMARIES_LOCK:
        kept = _SUMMARIES.get(key)
    if kept is not None and kept[0]() is tensor and kept[1] == version:
        return kept[2], kept[3]
    digest = content_digest(tensor)
    made = _summary_of(tensor, digest)

    def gone(ref: weakref.ref[torch.Tensor]) -> None:
        with _SUMMARIES_LOCK:
            if key in _SUMMARIES and _SUMMARIES[key][0] is ref:
                del _SUMMARIES[key]

    with _SUMMARIES_LOCK:
        if len(_SUMMARIES) >= _SUMMARIES_KEPT:
            _SUMMARIES.clear()
        _SUMMARIES[key] = (weakref.ref(tensor, gone), version, made, digest)
    return made, digest


_NUMPY = (torch.float32, torch.float64, torch.float16, torch.int64, torch.bool, torch.uint8)


def _summary_of(tensor: torch.Tensor, digest: bytes) -> TensorSummaryView:
    """The summary of the tensor's content: made, or found made for an equal tensor."""
    with _SUMMARIES_LOCK:
        made = _BY_CONTENT.get(digest)
        if made is not None:
            _BY_CONTENT.move_to_end(digest)
            return made
    made = summary(tensor)
    with _SUMMARIES_LOCK:
        _BY_CONTENT[digest] = made
        while len(_BY_CONTENT) > _BY_CONTENT_KEPT:
            _BY_CONTENT.popitem(last=False)
    return made


def content_digest(tensor: torch.Tensor) -> bytes:
    """128 bits of BLAKE2b over the tensor's dtype, shape and bytes (in row-major order)."""
    flat = tensor.detach().contiguous().reshape(-1)
    h = hashlib.blake2b(f"{flat.dtype} {list(tensor.shape)}".encode(), digest_size=16)
    h.update(flat.view(torch.uint8).numpy().data)
    return h.digest()


def as_2d(shape: list[int]) -> tuple[int, int]:
    """The rows and columns a tensor's heat map is made from: a vector is one row; any other
    rank is its first dimension against the rest flattened (row-major), so a Linear's weight
    is (out, in) and a Conv2d's (out_channels, in_channels x kh x kw)."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return 1, shape[0]
    return shape[0], int(np.prod(shape[1:]))


def block_starts(length: int, blocks: int) -> list[int]:
    """Where each of ``blocks`` nearly equal blocks of ``range(length)`` starts: block i is
    ``[i * length // blocks, (i + 1) * length // blocks)``, never empty."""
    return [i * length // blocks for i in range(blocks)]


def summary(tensor: torch.Tensor) -> TensorSummaryView:
    """Shape, min, max, mean, std, norm, a histogram and a heat map of ``tensor``, all in
    float64 (the tensor's values converted exactly). NaN or an infinity makes min, max, mean,
    std and norm what PyTorch says (NaN or inf) and the cells holding it; the histogram counts
    the finite values and says how many were not."""
    t = tensor.detach().to(torch.float64).reshape(-1)
    values = t.numpy()
    finite = values[np.isfinite(values)]
    counts, edges = histogram(finite)
    histogram_view: HistogramView = {
        "edges": edges.tolist(),
        "counts": counts.tolist(),
        "nonfinite": int(values.size - finite.size),
    }
    shape = list(tensor.shape)
    return {
        "summary": True,
        "shape": shape,
        "numel": int(values.size),
        "min": float(values.min()),  # numpy: a tenth of torch.min here; NaN if any is
        "max": float(values.max()),
        "mean": float(t.mean()),
        "std": float(t.std()),  # PyTorch's default: Bessel's correction (n - 1)
        "norm": float(torch.linalg.vector_norm(t)),
        "histogram": histogram_view,
        "heatmap": heat_map(values.reshape(as_2d(shape))),
    }


def histogram(
    finite: np.ndarray[Any, Any], bins: int = HISTOGRAM_BINS
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``numpy.histogram(finite, bins)``, its own rule and its own arithmetic for equal bins
    (numpy 2's ``_histograms_impl``), without its general steps: ``bins`` equal bins from the
    smallest to the largest value, the last one closed (all equal: that value ± 0.5; none: 0
    to 1). Half its time on a 128 x 64 weight; tests/engine/test_tensors.py holds it to numpy.
    Where numpy refuses (values further apart than float64's largest number, or equal and too
    big for ± 0.5 to move), they are binned halved, or all in the middle bin."""
    if finite.size == 0:
        first, last = 0.0, 1.0
    else:
        first, last = finite.min(), finite.max()
    if first == last:
        first, last = first - 0.5, last + 0.5
    with np.errstate(over="ignore"):
        span = last - first
    if not np.isfinite(span):  # further apart than float64 goes (numpy refuses): halves binned
        counts, edges = histogram(finite / 2, bins)
        return counts, edges * 2
    edges = np.linspace(first, last, bins + 1, endpoint=True, dtype=np.float64)
    if span == 0:  # equal values too big for ± 0.5 to move (numpy refuses): the middle bin
        counts = np.zeros(bins, dtype=np.intp)
        counts[bins // 2] = finite.size
        return counts, edges
    indices = ((finite - first) / (last - first) * bins).astype(np.intp)
    indices[indices == bins] -= 1
    indices[finite < edges[indices]] -= 1  # where the float arithmetic fell past an edge
    indices[(finite >= edges[indices + 1]) & (indices != bins - 1)] += 1
    return np.bincount(indices, minlength=bins), edges


def heat_map(grid: np.ndarray[Any, Any], side: int = HEAT_MAP_SIDE) -> HeatMapView:
    """The mean of each block of ``grid`` (rows x columns), at most ``side`` blocks a side."""
    n_rows, n_cols = grid.shape
    rows = block_starts(n_rows, min(n_rows, side))
    cols = block_starts(n_cols, min(n_cols, side))
    # sums of whole blocks: the rows of each row block, then the columns of each column block
    # (a block of one row or column is that row or column: no sum to make)
    sums = grid if len(rows) == n_rows else np.add.reduceat(grid, rows, axis=0)
    sums = sums if len(cols) == n_cols else np.add.reduceat(sums, cols, axis=1)
    heights = np.diff([*rows, n_rows])
    widths = np.diff([*cols, n_cols])
    cells = rounded(sums / np.outer(heights, widths))
    return {"rows": rows, "cols": cols, "shape": [n_rows, n_cols], "cells": cells.tolist()}


def rounded(values: np.ndarray[Any, Any], digits: int = CELL_DIGITS) -> np.ndarray[Any, Any]:
    """``values`` to ``digits`` significant digits (NaN and infinities as they are): a heat
    map's cells are a picture, and 17 digits each would make a 100,000-parameter model's
    answer three times the size. The elements themselves are exact (``page``)."""
    finite = np.isfinite(values) & (values != 0)
    out = values.copy()
    magnitude = np.floor(np.log10(np.abs(values[finite])))
    scale = 10.0 ** (digits - 1 - magnitude)
    out[finite] = np.round(values[finite] * scale) / scale
    return out


def bounds(numel: int, start: int, stop: int | None) -> tuple[int, int]:
    """The page ``[start, stop)`` of a tensor of ``numel`` elements, checked."""
    if stop is None:
        stop = min(numel, start + PAGE_LIMIT)
    if start > numel:
        raise BadRange(["query", "start"], f"start {start} is past the tensor's {numel} elements")
    if stop > numel:
        raise BadRange(["query", "stop"], f"stop {stop} is past the tensor's {numel} elements")
    if stop < start:
        raise BadRange(["query", "stop"], f"stop {stop} is before start {start}")
    if stop - start > PAGE_LIMIT:
        raise BadRange(
            ["query", "stop"], f"a page holds at most {PAGE_LIMIT} elements, not {stop - start}"
        )
    return start, stop
