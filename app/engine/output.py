"""What the model computes now, for the output view: the neuron's line, the moons boundary."""

from __future__ import annotations

import torch
from torch import nn

from app.engine.views import LineView, OutputView


def view(model: nn.Module, points: torch.Tensor, targets: torch.Tensor, size: int) -> OutputView:
    """The view, with the model in eval mode for the call: no dropout mask is drawn and
    BatchNorm's statistics stay put (its mode is put back after)."""
    training = model.training
    model.eval()
    try:
        return _view(model, points, targets, size)
    finally:
        model.train(training)


@torch.no_grad()  # a look at the model, not a line of the loop: no graph, no store touched
def _view(model: nn.Module, points: torch.Tensor, targets: torch.Tensor, size: int) -> OutputView:
    """One input feature (neuron, parabola): the line the model draws over x in [0, 5].
    Two (moons): P(class 1) on a size-by-size grid over the data's extent (row-major, y from
    bottom to top). Both with the training points."""
    shown, labels = points.tolist(), targets.flatten().tolist()
    if points.shape[1] == 1:
        xs = torch.tensor([[0.0], [5.0]], dtype=points.dtype)
        line: LineView = {"x": [0.0, 5.0], "y": model(xs).flatten().tolist()}
        return {"kind": "line", "points": shown, "targets": labels, "line": line}
    lo, hi = points.min(0).values - 0.5, points.max(0).values + 0.5
    gx = torch.linspace(float(lo[0]), float(hi[0]), size, dtype=points.dtype)
    gy = torch.linspace(float(lo[1]), float(hi[1]), size, dtype=points.dtype)
    yy, xx = torch.meshgrid(gy, gx, indexing="ij")
    p = torch.softmax(model(torch.stack([xx.flatten(), yy.flatten()], 1)), 1)[:, 1]
    extent = [float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1])]
    return {
        "kind": "boundary",
        "points": shown,
        "targets": labels,
        "extent": extent,
        "p": p.reshape(size, size).tolist(),
    }
