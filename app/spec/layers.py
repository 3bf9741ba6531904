"""The closed tables of a spec's layers and losses (issue 28), and what is done with a layer:
its arguments checked (PyTorch's own names, bounded), the layer made with its input size
inferred from what flows in, run dry on PyTorch's meta device (shapes and parameters, no
memory), and its ``init`` applied. Nothing is looked up by a user's string outside
``LAYERS`` and ``LOSSES``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import nn

from app.spec import data as data_
from app.spec.data import SpecError

# -- the arguments a layer or a loss may take -------------------------------------


@dataclass(frozen=True)
class Kw:
    """One keyword argument: its kind ("int", "float", "bool", "size": an int or a list of
    ints, "choice") and bounds."""

    kind: str
    lo: float = -math.inf
    hi: float = math.inf
    choices: tuple[str, ...] = ()


SIZE = Kw("size", 1, 64)
DIM = Kw("int", -8, 8)
EPS = Kw("float", 1e-12, 1)


@dataclass(frozen=True)
class LayerKind:
    make: type[nn.Module]
    kwargs: dict[str, Kw] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    # the argument inferred from the input, and how: "last" (its last dimension), "channels"
    # (its first, of an input with ``dims`` dimensions besides the batch)
    inferred: str | None = None
    dims: int | None = None  # the input's dimensions besides the batch's (None: any)
    defaults: dict[str, Any] = field(default_factory=dict)


FEATURES = Kw("int", 1, 100_000)
CHANNELS = Kw("int", 1, 4096)
CONV = {
    "out_channels": CHANNELS,
    "kernel_size": SIZE,
    "stride": SIZE,
    "padding": Kw("size", 0, 64),
    "dilation": SIZE,
    "bias": Kw("bool"),
}
POOL = {"kernel_size": SIZE, "stride": SIZE, "padding": Kw("size", 0, 32)}
NORM = {
    "eps": EPS,
    "momentum": Kw("float", 0, 1),
    "affine": Kw("bool"),
    "track_running_stats": Kw("bool"),
}

LAYERS: dict[str, LayerKind] = {
    "Linear": LayerKind(
        nn.Linear,
        {"in_features": FEATURES, "out_features": FEATURES, "bias": Kw("bool")},
        ("out_features",),
        "in_features",
    ),
    "Conv1d": LayerKind(
        nn.Conv1d,
        {"in_channels": CHANNELS, **CONV},
        ("out_channels", "kernel_size"),
        "in_channels",
        2,
    ),
    "Conv2d": LayerKind(
        nn.Conv2d,
        {"in_channels": CHANNELS, **CONV},
        ("out_channels", "kernel_size"),
        "in_channels",
        3,
    ),
    "MaxPool2d": LayerKind(nn.MaxPool2d, POOL, ("kernel_size",), dims=3),
    "AvgPool2d": LayerKind(nn.AvgPool2d, POOL, ("kernel_size",), dims=3),
    "Flatten": LayerKind(nn.Flatten, {"start_dim": DIM, "end_dim": DIM}),
    "Unflatten": LayerKind(
        nn.Unflatten, {"dim": DIM, "unflattened_size": SIZE}, ("dim", "unflattened_size")
    ),
    "ReLU": LayerKind(nn.ReLU),
    "LeakyReLU": LayerKind(nn.LeakyReLU, {"negative_slope": Kw("float", 0, 10)}),
    "ELU": LayerKind(nn.ELU, {"alpha": Kw("float", 0, 10)}),
    "GELU": LayerKind(nn.GELU, {"approximate": Kw("choice", choices=("none", "tanh"))}),
    "SiLU": LayerKind(nn.SiLU),
    "Tanh": LayerKind(nn.Tanh),
    "Sigmoid": LayerKind(nn.Sigmoid),
    # dim defaults to 1 (the features of a batch of rows): PyTorch's own default (None) is
    # deprecated and warns
    "Softmax": LayerKind(nn.Softmax, {"dim": DIM}, defaults={"dim": 1}),
    "LogSoftmax": LayerKind(nn.LogSoftmax, {"dim": DIM}, defaults={"dim": 1}),
    "Dropout": LayerKind(nn.Dropout, {"p": Kw("float", 0, 0.99)}),
    "BatchNorm1d": LayerKind(
        nn.BatchNorm1d, {"num_features": CHANNELS, **NORM}, (), "num_features"
    ),
    "BatchNorm2d": LayerKind(
        nn.BatchNorm2d, {"num_features": CHANNELS, **NORM}, (), "num_features", 3
    ),
    "LayerNorm": LayerKind(
        nn.LayerNorm,
        {
            "normalized_shape": Kw("size", 1, 100_000),
            "eps": EPS,
            "elementwise_affine": Kw("bool"),
            "bias": Kw("bool"),
        },
        (),
        "normalized_shape",
    ),
    "Identity": LayerKind(nn.Identity),
}

REDUCTION = Kw("choice", choices=("mean", "sum"))  # "none" gives no scalar to backward from


@dataclass(frozen=True)
class LossKind:
    make: type[nn.Module]
    kwargs: dict[str, Kw]
    task: str  # the task it scores


LOSSES: dict[str, LossKind] = {
    "MSELoss": LossKind(nn.MSELoss, {"reduction": REDUCTION}, "regression"),
    "L1Loss": LossKind(nn.L1Loss, {"reduction": REDUCTION}, "regression"),
    "SmoothL1Loss": LossKind(
        nn.SmoothL1Loss, {"reduction": REDUCTION, "beta": Kw("float", 0, 1e6)}, "regression"
    ),
    "HuberLoss": LossKind(
        nn.HuberLoss, {"reduction": REDUCTION, "delta": Kw("float", 1e-9, 1e6)}, "regression"
    ),
    "CrossEntropyLoss": LossKind(
        nn.CrossEntropyLoss,
        {"reduction": REDUCTION, "label_smoothing": Kw("float", 0, 1)},
        "classification",
    ),
    # two classes, one output: the target is the class index (0 or 1) in the model's dtype
    "BCEWithLogitsLoss": LossKind(nn.BCEWithLogitsLoss, {"reduction": REDUCTION}, "classification"),
    "NLLLoss": LossKind(nn.NLLLoss, {"reduction": REDUCTION}, "classification"),
}
DEFAULT_LOSS = {"regression": "MSELoss", "classification": "CrossEntropyLoss"}
INITS = ("default", "zeros")
MAX_INIT = 4_096  # explicit initial values: for small layers only


def _kwarg(owner: str, key: str, kw: Kw, value: Any, loc: tuple[str | int, ...]) -> Any:
    def bad(what: str) -> SpecError:
        return SpecError(f"{owner}: {key} must be {what}", loc)

    if kw.kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if kw.kind == "choice":
        if value not in kw.choices:
            raise bad("one of " + ", ".join(kw.choices))
        return value
    if kw.kind == "size" and isinstance(value, list):
        if not 1 <= len(value) <= 3:
            raise bad("an integer or a list of 1 to 3 integers")
        return [_kwarg(owner, key, Kw("int", kw.lo, kw.hi), v, loc) for v in value]
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kw.kind in ("int", "size"):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not number or not isinstance(value, int):
            raise bad("an integer")
    elif not number or not math.isfinite(value):
        raise bad("a number")
    if not kw.lo <= value <= kw.hi:
        raise bad(f"from {_num(kw.lo)} to {_num(kw.hi)}")
    return value


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def layer_name(i: int, layer: dict[str, Any]) -> str:
    return f"layer {i}, {layer['type']}"


def normalize_layer(i: int, layer: Any) -> dict[str, Any]:
    loc: tuple[str | int, ...] = ("model", i)
    if not isinstance(layer, dict) or not isinstance(layer.get("type"), str):
        raise SpecError(f"layer {i}: an object with a type", loc)
    kind = LAYERS.get(layer["type"])
    if kind is None:
        raise SpecError(
            f"layer {i}: no layer type {layer['type'][:40]!r} (see GET /api/catalogue)", loc
        )
    out: dict[str, Any] = {"type": layer["type"]}
    for key, value in layer.items():
        if key in ("type", "init"):
            continue
        if key not in kind.kwargs:
            known = ", ".join(kind.kwargs) or "no arguments"
            raise SpecError(f"{layer_name(i, layer)}: no argument {key!r} (it takes {known})", loc)
        out[key] = _kwarg(layer_name(i, layer), key, kind.kwargs[key], value, loc)
    for key in kind.required:
        if key not in out:
            raise SpecError(f"{layer_name(i, layer)}: {key} is required", loc)
    if "init" in layer:
        init = layer["init"]
        if isinstance(init, dict):
            if not set(init) <= {"weight", "bias"} or not init:
                raise SpecError(f"{layer_name(i, layer)}: init takes weight and bias", loc)
            for key, values in init.items():
                array = np.asarray(values, dtype=object)
                if array.size > MAX_INIT or not all(finite_number(v) for v in array.flat):
                    raise SpecError(
                        f"{layer_name(i, layer)}: init {key}: at most {MAX_INIT} finite numbers",
                        loc,
                    )
        elif init not in INITS:
            raise SpecError(f"{layer_name(i, layer)}: init is default, zeros or values", loc)
        out["init"] = init
    return out


def finite_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def normalize_loss(loss: Any, task: str) -> dict[str, Any]:
    if loss is None:
        return {"type": DEFAULT_LOSS[task]}
    if not isinstance(loss, dict) or loss.get("type") not in LOSSES:
        raise SpecError(f"loss: an object with a type, one of {', '.join(LOSSES)}", ("loss",))
    kind = LOSSES[loss["type"]]
    if kind.task != task:
        raise SpecError(f"loss: {loss['type']} is for a {kind.task}, this is a {task}", ("loss",))
    out: dict[str, Any] = {"type": loss["type"]}
    for key, value in loss.items():
        if key == "type":
            continue
        if key not in kind.kwargs:
            raise SpecError(f"loss: {loss['type']} takes no argument {key!r} here", ("loss",))
        out[key] = _kwarg(loss["type"], key, kind.kwargs[key], value, ("loss",))
    return out


def loss_fn(loss: dict[str, Any]) -> nn.Module:
    """The spec's loss function (its ``loss``, normalized)."""
    kind = LOSSES[loss["type"]]
    kwargs = {k: v for k, v in loss.items() if k != "type"}
    return kind.make(**kwargs)


def catalogue() -> dict[str, Any]:
    """The tables as the page gets them: layer types with their arguments, losses, datasets."""

    def args(kws: dict[str, Kw]) -> dict[str, Any]:
        return {
            k: {"kind": kw.kind, **({"choices": list(kw.choices)} if kw.choices else {})}
            for k, kw in kws.items()
        }

    return {
        "layers": {
            name: {
                "args": args(kind.kwargs),
                "required": list(kind.required),
                "inferred": kind.inferred,
            }
            for name, kind in LAYERS.items()
        },
        "losses": {
            name: {"args": args(kind.kwargs), "task": kind.task} for name, kind in LOSSES.items()
        },
        "sklearn": {
            name: {
                k: {"kind": a.kind.__name__, "lo": _bound(a.lo), "hi": _bound(a.hi)}
                for k, a in arg.items()
            }
            for name, arg in data_.SKLEARN.items()
        },
    }


def _bound(x: float) -> float | None:
    return None if math.isinf(x) else x
