"""Reading the stores: a Lab as the plain values of its Session (the engine's part of it)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch

from app.engine import scenarios
from app.engine import theory as formal
from app.engine.parts import Parts
from app.engine.views import LossPointView, ProgramView, SessionView, TheoryView
from loop_stepper import stores


def view(lab: Parts, since: int = 0) -> SessionView:
    """The stores and the loop's position as plain values: the exact floats PyTorch holds
    (NaN and infinities too; the web layer spells those as JSON strings).

    ``since`` trims the history to the points a client does not have yet: a page that
    clicks once a second would otherwise fetch the same 1000 points every time.
    """
    described = lab.described
    answer = _view(lab, since, described)
    if lab.setup.spec is not None:
        answer["spec"] = lab.setup.spec
    return answer


def _view(lab: Parts, since: int, described: ProgramView) -> SessionView:
    drawn = stores.view(lab)  # the stores a recorded moment shows too
    return {
        "scenario": lab.setup.scenario,
        "lr": lab.lr,
        "seed": lab.setup.seed,
        # the program's four keys one by one: a question hides them (and a ** item would have
        # to hold every optional key of the Session too)
        "toggles": described["toggles"],
        "program": described["program"],
        "code": described["code"],
        "preset": described["preset"],
        "accumulate": lab.setup.accumulate,
        "optimizer": lab.setup.optimizer.describe(),
        "cursor": lab.cursor,
        "next_line": lab.next_line,
        "iteration": lab.iteration,
        "steps": lab.steps,
        "params": drawn["params"],
        "optimizer_state": drawn["optimizer_state"],
        "max_norm": lab.max_norm,
        "scheduler": lab.schedule.describe(),
        "model_options": {
            "dropout": lab.setup.dropout,
            "batchnorm": lab.setup.batchnorm,
            "softmax_before_loss": lab.setup.softmax_before_loss,
            "dtype": str(lab.dtype_of_params).removeprefix("torch."),
        },
        "mode": "train" if lab.model.training else "eval",
        "buffers": [
            {
                "name": n,
                "shape": list(b.shape),
                "dtype": str(b.dtype).removeprefix("torch."),
                "value": b.tolist(),
            }
            for n, b in lab.buffers.items()
        ],
        "running_loss": lab.running.describe(),
        "amp": None if lab.amp.spec is None else lab.amp.spec.describe(),
        "scaler": lab.amp.describe(lab.optimizer),
        "loss_dtype": None if lab.loss_tensor is None else _name(lab.loss_tensor.dtype),
        "ckpt": lab.ckpt.describe(),
        "loss": drawn["loss"],
        "graph": drawn["graph"],
        "last": lab.last,
        "losses": lab.losses,
        "history": history_since(lab.history, since),
        "theory": theory(lab),
    }


def history_since(history: Sequence[LossPointView], since: int) -> list[LossPointView]:
    """The kept loss points numbered ``since`` or later (all kept ones for 0)."""
    if not history:
        return []
    wanted = len(history) - max(0, since - history[0]["n"])
    if wanted <= 0:
        return []
    # from the right: the usual answer wants one new point, not a walk over 1000
    return list(itertools.islice(reversed(history), wanted))[::-1]


def theory(lab: Parts) -> TheoryView | None:
    """The parabola's predicted behaviour for the current learning rate."""
    if lab.setup.scenario != "parabola":
        return None
    h = lab.setup.options.get("curvature", scenarios.PARABOLA_CURVATURE)
    target = lab.setup.options.get("theta_star", scenarios.PARABOLA_TARGET)
    start = lab.initial.params["theta"].item()
    return formal.parabola(lab.lr, h, start, target)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
