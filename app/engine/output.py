"""What the model computes now, for the output view: the neuron's line, the moons boundary, and
for a spec's model the view its task calls for (``of_spec``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import torch
from torch import nn

from app.engine.views import LineView, OutputView

if TYPE_CHECKING:
    from app.spec.built import Built

SHOWN = 1000  # points sent with a view at most (the first rows: the split is shuffled already)
CURVE = 50  # points of a 1-D regression's fitted curve


def view(
    model: nn.Module,
    points: torch.Tensor,
    targets: torch.Tensor,
    size: int,
    built: Built | None = None,
    loss_fn: nn.Module | None = None,
) -> OutputView:
    """The view, with the model in eval mode for the call: no dropout mask is drawn and
    BatchNorm's statistics stay put (its mode is put back after)."""
    training = model.training
    model.eval()
    try:
        if built is not None and built.task is not None and loss_fn is not None:
            return of_spec(model, built, loss_fn, size)
        return _view(model, points, targets, size)
    finally:
        model.train(training)


@torch.no_grad()
def of_spec(model: nn.Module, built: Built, loss_fn: nn.Module, size: int) -> OutputView:
    """A spec's view by its task: 1-D regression, the fitted curve over the points; 2-D
    classification, the decision regions; anything else the validation split (the training
    split without one) as a confusion matrix or predicted against true, with its loss."""
    x, y = built.points, built.targets
    features = x.shape[1]
    if built.task == "regression" and features == 1:
        lo, hi = float(x.min()), float(x.max())
        xs = torch.linspace(lo, hi, CURVE, dtype=x.dtype).reshape(-1, 1)
        curve: LineView = {"x": xs.flatten().tolist(), "y": model(xs).flatten().tolist()}
        shown = x[:SHOWN].tolist()
        return {
            "kind": "line",
            "points": shown,
            "targets": y[:SHOWN].flatten().tolist(),
            "line": curve,
        }
    if built.task == "classification" and features == 2 and built.classes is not None:
        return _regions(model, x, y, size, len(built.classes))
    split: Literal["validation", "training"] = (
        "validation" if built.val_points is not None else "training"
    )
    vx = built.val_points if built.val_points is not None else x
    vy = built.val_targets if built.val_targets is not None else y
    out = model(vx)
    loss = float(loss_fn(out, vy))
    if built.task == "classification" and built.classes is not None:
        n = len(built.classes)
        predicted = (out.flatten() > 0).long() if out.shape[1] == 1 else out.argmax(1)
        truth = vy.flatten().long()
        matrix = torch.zeros((n, n), dtype=torch.long)
        matrix.index_put_((truth, predicted), torch.ones_like(truth), accumulate=True)
        return {
            "kind": "confusion",
            "split": split,
            "classes": built.classes,
            "matrix": matrix.tolist(),
            "accuracy": float((predicted == truth).double().mean()),
            "loss": loss,
            "points": [],
            "targets": [],
        }
    return {
        "kind": "scatter",
        "split": split,
        "true": vy[:SHOWN].flatten().tolist(),
        "predicted": out[:SHOWN].flatten().tolist(),
        "loss": loss,
        "points": [],
        "targets": [],
    }


def _regions(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, size: int, classes: int
) -> OutputView:
    """The decision regions over the points: for two classes P(class 1) per cell (as moons);
    for more, the likeliest class per cell and its probability."""
    lo, hi = x.min(0).values - 0.5, x.max(0).values + 0.5
    gx = torch.linspace(float(lo[0]), float(hi[0]), size, dtype=x.dtype)
    gy = torch.linspace(float(lo[1]), float(hi[1]), size, dtype=x.dtype)
    yy, xx = torch.meshgrid(gy, gx, indexing="ij")
    out = model(torch.stack([xx.flatten(), yy.flatten()], 1))
    if out.shape[1] == 1:  # one logit (BCEWithLogitsLoss)
        probs = torch.cat([1 - torch.sigmoid(out), torch.sigmoid(out)], 1)
    else:
        probs = torch.softmax(out, 1)
    view: OutputView = {
        "kind": "boundary",
        "points": x[:SHOWN].tolist(),
        "targets": y[:SHOWN].flatten().tolist(),
        "extent": [float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1])],
        "p": probs[:, 1].reshape(size, size).tolist(),
    }
    if classes > 2:
        best, label = probs.max(1)
        view["p"] = best.reshape(size, size).tolist()
        view["label"] = label.reshape(size, size).tolist()
    return view


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
