"""A model, its data and its loss described as data (issue 28): checked, then built.

``normalize`` reads a spec as the request sends it, checks every field against the closed
tables below (``LAYERS``, ``LOSSES``, ``data.SKLEARN``) and the bounds, and answers it whole
with its defaults filled in (what the log keeps); a problem is a ``SpecError`` naming where.
``check`` builds it once, dry (each layer's output shape and parameters, what the page shows
as it is edited); ``build`` makes the seeded model and the data's tensors, cached per setup,
in steps 4 and 5 of docs/api.md#your-own-model-and-data.

Input sizes (``in_features``, ``in_channels``, ``num_features``, ``normalized_shape``) are
inferred from what flows in: each layer is made in turn and a zero batch run through it, so a
shape PyTorch refuses is refused here, with the layer's index, its type and both shapes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NotRequired, TypedDict

import numpy as np
import torch
from torch import nn

from app.engine import data as data_
from app.engine.batches import Batches, Epochs, FullBatch, InOrder
from app.engine.data import Data, SpecError
from app.engine.scenarios import Built, fresh_copy
from app.engine.torchlock import TORCH_LOCK

__all__ = ["SpecError", "normalize"]


class SpecJson(TypedDict):
    """A spec as the log keeps it: everything filled in."""

    model: list[dict[str, Any]]
    data: dict[str, Any]
    task: str
    loss: dict[str, Any]
    validation: float
    batch_size: int
    standardize: bool
    shuffle: bool


@dataclass(frozen=True)
class SpecLimits:
    """The bounds of a spec: settings of the server (``LOOP_STEPPER_SPEC_MAX_*``)."""

    params: int = 100_000
    layers: int = 32
    rows: int = 10_000
    features: int = 1_024
    batch: int = 1_024


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
SPEC_KEYS = ("model", "data", "task", "loss", "validation", "batch_size", "standardize", "shuffle")


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


def _name(i: int, layer: dict[str, Any]) -> str:
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
            raise SpecError(f"{_name(i, layer)}: no argument {key!r} (it takes {known})", loc)
        out[key] = _kwarg(_name(i, layer), key, kind.kwargs[key], value, loc)
    for key in kind.required:
        if key not in out:
            raise SpecError(f"{_name(i, layer)}: {key} is required", loc)
    if "init" in layer:
        init = layer["init"]
        if isinstance(init, dict):
            if not set(init) <= {"weight", "bias"} or not init:
                raise SpecError(f"{_name(i, layer)}: init takes weight and bias", loc)
            for key, values in init.items():
                array = np.asarray(values, dtype=object)
                if array.size > MAX_INIT or not all(_finite(v) for v in array.flat):
                    raise SpecError(
                        f"{_name(i, layer)}: init {key}: at most {MAX_INIT} finite numbers", loc
                    )
        elif init not in INITS:
            raise SpecError(f"{_name(i, layer)}: init is default, zeros or values", loc)
        out["init"] = init
    return out


def _finite(v: Any) -> bool:
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


def normalize(body: dict[str, Any], seed: int, limits: SpecLimits) -> SpecJson:
    """The spec of a request body, checked and filled in; also builds its data once (cached),
    since the task, the default batch and the split's rows depend on it."""
    layers = body.get("model")
    if not isinstance(layers, list) or not layers:
        raise SpecError("model: a list of layers", ("model",))
    if len(layers) > limits.layers:
        raise SpecError(f"model: at most {limits.layers} layers, not {len(layers)}", ("model",))
    model = [normalize_layer(i, layer) for i, layer in enumerate(layers)]
    raw_data = body.get("data")
    if raw_data is None:
        raise SpecError("data: required with a model", ("data",))
    raw_data = _seeded(raw_data, seed)
    raw = data_.raw_rows(raw_data, limits.rows, limits.features)
    task = body.get("task")
    if task is None:
        task = data_.infer_task(raw)
    elif task not in ("regression", "classification"):
        raise SpecError("task: regression or classification", ("task",))
    validation = body.get("validation", 0.25)
    if not _finite(validation) or not 0 <= validation < 1:
        raise SpecError("validation: a fraction from 0 up to (not including) 1", ("validation",))
    standardize = body.get("standardize", False)
    shuffle = body.get("shuffle", True)
    for key, value in (("standardize", standardize), ("shuffle", shuffle)):
        if not isinstance(value, bool):
            raise SpecError(f"{key}: true or false", (key,))
    loss = normalize_loss(body.get("loss"), task)
    data = _data(
        json.dumps(raw_data, sort_keys=True), task, float(validation), seed, standardize, limits
    )
    train = len(data.y_train)
    batch_size = body.get("batch_size", min(train, 32))
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise SpecError("batch_size: a whole number of rows, at least 1", ("batch_size",))
    if batch_size > limits.batch:
        raise SpecError(f"batch_size: at most {limits.batch}", ("batch_size",))
    return {
        "model": model,
        "data": raw_data,
        "task": task,
        "loss": loss,
        "validation": float(validation),
        "batch_size": batch_size,
        "standardize": standardize,
        "shuffle": shuffle,
    }


def _seeded(data: Any, seed: int) -> Any:
    """A scikit-learn generator called without ``random_state`` draws other rows on every
    call: the session's seed is its ``random_state`` then, kept in the spec, so the session
    (and its replay, and its export) always has the same rows."""
    if not isinstance(data, dict) or data.get("kind") != "sklearn":
        return data
    name, args = data.get("name"), data.get("args", {})
    takes = isinstance(name, str) and "random_state" in data_.SKLEARN.get(name, {})
    if takes and isinstance(args, dict) and "random_state" not in args:
        return {**data, "args": {**args, "random_state": seed}}
    return data


@lru_cache(maxsize=32)
def _cached_data(
    data_json: str, task: str, validation: float, seed: int, scale: bool, rows: int, features: int
) -> Data:
    raw = data_.raw_rows(json.loads(data_json), rows, features)
    return data_.build_data(raw, task, validation, seed, scale)


def _data(
    data_json: str, task: str, validation: float, seed: int, scale: bool, limits: SpecLimits
) -> Data:
    return _cached_data(data_json, task, validation, seed, scale, limits.rows, limits.features)


def data_of(spec: SpecJson, seed: int) -> Data:
    """Steps 1-3 for a normalized spec (cached: read-only arrays shared by its sessions)."""
    return _cached_data(
        json.dumps(spec["data"], sort_keys=True),
        spec["task"],
        spec["validation"],
        seed,
        spec["standardize"],
        2**62,
        2**62,
    )


# -- building: step 4 -------------------------------------------------------------


class LayerJson(TypedDict):
    index: int
    type: str
    output_shape: list[int | None]
    params: int


class PreviewJson(TypedDict):
    """A look at the training rows for the page: a scatter of the first 300 (2 features),
    8 x 8 images of the first 16 (64 features: digits), else the first 5 rows."""

    kind: str  # "scatter" | "images" | "rows"
    features: list[str]
    rows: list[list[float]]
    targets: list[float | str]


class CheckJson(TypedDict):
    layers: list[LayerJson]
    params: int
    preview: PreviewJson
    input_shape: list[int | None]
    task: str
    classes: int | None
    rows: dict[str, int]
    warnings: NotRequired[list[str]]


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _make(i: int, layer: dict[str, Any], shape: tuple[int, ...], meta: bool = False) -> nn.Module:
    """Layer ``i`` for an input of per-row ``shape``: its input size inferred or checked.
    ``meta``: on PyTorch's meta device (shapes, no memory: a check never allocates a model
    past the bounds)."""
    kind = LAYERS[layer["type"]]
    kwargs = {**kind.defaults, **{k: v for k, v in layer.items() if k not in ("type", "init")}}
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    name = _name(i, layer)
    loc: tuple[str | int, ...] = ("model", i)
    if kind.dims is not None and len(shape) != kind.dims:
        want = {2: "(C, L)", 3: "(C, H, W)"}[kind.dims]
        raise SpecError(f"{name}: expects an input of shape {want}, gets {_shape(shape)}", loc)
    if kind.inferred is not None:
        if kind.inferred == "normalized_shape":
            have: Any = (shape[-1],)
            given = kwargs.get("normalized_shape")
            if isinstance(given, int):
                given = (given,)
            if given is not None:
                have = tuple(shape[len(shape) - len(given) :])
                if tuple(given) != have:
                    raise SpecError(
                        f"{name}: expects shape {_shape(tuple(given))}, gets {_shape(shape)}", loc
                    )
            kwargs["normalized_shape"] = have if given is None else tuple(given)
        else:
            have = shape[-1] if kind.inferred == "in_features" else shape[0]
            if kind.inferred == "num_features" and len(shape) not in (1, 2) and kind.dims is None:
                raise SpecError(
                    f"{name}: expects an input of shape (C,) or (C, L), gets {_shape(shape)}", loc
                )
            given = kwargs.get(kind.inferred)
            what = "features" if kind.inferred == "in_features" else "channels"
            if given is not None and given != have:
                raise SpecError(f"{name}: expects {given} {what}, gets {have}", loc)
            kwargs[kind.inferred] = have
    if meta and kind.inferred is not None:  # the layers with parameters
        kwargs["device"] = "meta"
    try:
        return kind.make(**kwargs)
    except (ValueError, TypeError, RuntimeError) as e:
        raise SpecError(f"{name}: {e}", loc) from e


MAX_VALUES = 2**20  # values per row flowing out of a layer (a check's bound on activations)


def _shapes(
    model: list[dict[str, Any]], features: int, limits: SpecLimits
) -> tuple[list[LayerJson], list[tuple[int, ...]]]:
    """Each layer made on the meta device in order and a batch of 2 run through it (eval
    mode): what flows out of it and its parameters, without memory; refused past the
    parameters' bound as soon as it is passed. Also each layer's input shape."""
    shape: tuple[int, ...] = (features,)
    shown: list[LayerJson] = []
    inputs: list[tuple[int, ...]] = []
    total = 0
    for i, layer in enumerate(model):
        module = _make(i, layer, shape, meta=True).eval()
        total += sum(p.numel() for p in module.parameters())
        if total > limits.params:
            raise SpecError(
                f"the model has {total} parameters by layer {i}: at most {limits.params}",
                ("model",),
            )
        try:
            with torch.no_grad():
                out = module(torch.zeros((2, *shape), device="meta"))
        except (RuntimeError, ValueError, IndexError, NotImplementedError) as e:
            raise SpecError(f"{_name(i, layer)}: gets {_shape(shape)}: {e}", ("model", i)) from e
        if out.dim() < 2 or out.shape[0] != 2 or 0 in out.shape:
            raise SpecError(
                f"{_name(i, layer)}: makes {tuple(out.shape)} of a batch of 2 "
                "(the batch must stay)",
                ("model", i),
            )
        inputs.append(shape)
        shape = tuple(out.shape[1:])
        if math.prod(shape) > MAX_VALUES:
            raise SpecError(
                f"{_name(i, layer)}: makes {math.prod(shape)} values a row: at most {MAX_VALUES}",
                ("model", i),
            )
        count = sum(p.numel() for p in module.parameters())
        shown.append(
            {"index": i, "type": layer["type"], "output_shape": [None, *shape], "params": count}
        )
    return shown, inputs


def _fits_task(spec: SpecJson, out: tuple[int, ...], data: Data) -> None:
    """The model's output must be what the loss needs of it."""
    loss = spec["loss"]["type"]
    where = ("model", len(spec["model"]) - 1)
    if spec["task"] == "regression":
        if out != (1,):
            raise SpecError(f"the model's output is {_shape(out)}: a regression needs (1,)", where)
        return
    classes = len(data.classes or [])
    if loss == "BCEWithLogitsLoss":
        if classes != 2 or out != (1,):
            raise SpecError(
                f"BCEWithLogitsLoss: two classes and an output of (1,), not {classes} and "
                f"{_shape(out)}",
                where,
            )
    elif out != (classes,):
        raise SpecError(
            f"the model's output is {_shape(out)}: {classes} classes need ({classes},)", where
        )


def check(spec: SpecJson, seed: int, limits: SpecLimits) -> CheckJson:
    """The spec built dry: each layer's output shape and parameters; refused past the bounds
    or where the output does not fit the loss."""
    data = data_of(spec, seed)
    features = data.x_train.shape[1]
    shown, _ = _shapes(spec["model"], features, limits)
    total = sum(layer["params"] for layer in shown)
    out = tuple(x for x in shown[-1]["output_shape"] if x is not None)
    _fits_task(spec, out, data)
    for i, layer in enumerate(spec["model"]):
        _init(i, layer, _make(i, layer, _input_shape(shown, i, features), meta=True), dry=True)
    return {
        "layers": shown,
        "params": total,
        "preview": preview(data),
        "input_shape": [None, features],
        "task": spec["task"],
        "classes": None if data.classes is None else len(data.classes),
        "rows": {
            "train": len(data.y_train),
            "validation": 0 if data.y_val is None else len(data.y_val),
        },
    }


def input_shapes(model: list[dict[str, Any]], features: int) -> list[tuple[int, ...]]:
    """Each layer's input shape (a row's), for a model checked before."""
    return _shapes(model, features, SpecLimits(params=2**62))[1]


def preview(data: Data) -> PreviewJson:
    x, y = data.x_train, data.y_train
    f = x.shape[1]
    kind, n = ("scatter", 300) if f == 2 else ("images", 16) if f == 64 else ("rows", 5)
    names = data.classes
    targets: list[float | str] = (
        [names[int(i)] for i in y[:n]] if names is not None else y[:n].flatten().tolist()
    )
    return {"kind": kind, "features": data.features, "rows": x[:n].tolist(), "targets": targets}


def _input_shape(shown: list[LayerJson], i: int, features: int) -> tuple[int, ...]:
    if i == 0:
        return (features,)
    return tuple(x for x in shown[i - 1]["output_shape"] if x is not None)


def _init(i: int, layer: dict[str, Any], module: nn.Module, dry: bool = False) -> None:
    init = layer.get("init", "default")
    if init == "default":
        return
    params = dict(module.named_parameters(recurse=False))
    if init == "zeros":
        if not params:
            raise SpecError(f"{_name(i, layer)}: has no parameters to set", ("model", i))
        if not dry:
            with torch.no_grad():
                for param in params.values():
                    param.zero_()
        return
    for key, values in init.items():
        p = params.get(key)
        if p is None:
            raise SpecError(f"{_name(i, layer)}: has no {key}", ("model", i))
        given = torch.tensor(values, dtype=torch.float64)
        if given.shape != p.shape:
            raise SpecError(
                f"{_name(i, layer)}: init {key} is {_shape(tuple(given.shape))}, "
                f"the {key} is {_shape(tuple(p.shape))}",
                ("model", i),
            )
        if not dry:
            with torch.no_grad():
                p.copy_(given)


DTYPES = {"float64": torch.float64, "float32": torch.float32}


@dataclass(frozen=True)
class Template:
    """A spec's seeded model, its data as tensors, and torch's generator after the build."""

    model: nn.Module
    rng: torch.Tensor
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor | None
    y_val: torch.Tensor | None
    data: Data


def _targets(y: np.ndarray, spec: SpecJson, dtype: torch.dtype) -> torch.Tensor:
    t = torch.tensor(y)
    if spec["task"] == "regression":
        return t.to(dtype)
    if spec["loss"]["type"] == "BCEWithLogitsLoss":
        return t.to(dtype).reshape(-1, 1)
    return t


@lru_cache(maxsize=64)  # read-only and copied per session (scenarios.fresh_copy)
def _template(spec_json: str, seed: int, dtype: str) -> Template:
    spec: SpecJson = json.loads(spec_json)
    data = data_of(spec, seed)
    kind = DTYPES[dtype]
    inputs = input_shapes(spec["model"], data.x_train.shape[1])
    with TORCH_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # right before the model is built, as step 4 says
        layers = [_make(i, layer, inputs[i]) for i, layer in enumerate(spec["model"])]
        model = nn.Sequential(*layers).to(kind)
        rng = torch.get_rng_state()
    for i, (layer, module) in enumerate(zip(spec["model"], layers, strict=True)):
        _init(i, layer, module)
    x_val = None if data.x_val is None else torch.tensor(data.x_val).to(kind)
    y_val = None if data.y_val is None else _targets(data.y_val, spec, kind)
    return Template(
        model,
        rng,
        torch.tensor(data.x_train).to(kind),
        _targets(data.y_train, spec, kind),
        x_val,
        y_val,
        data,
    )


def template(spec: SpecJson, seed: int, dtype: str) -> Template:
    return _template(json.dumps(spec, sort_keys=True), seed, dtype)


def loss_fn(spec: SpecJson) -> nn.Module:
    kind = LOSSES[spec["loss"]["type"]]
    kwargs = {k: v for k, v in spec["loss"].items() if k != "type"}
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


# -- a Lab's pieces: steps 4 and 5 --------------------------------------------------


def built(spec: SpecJson, seed: int, dtype: str) -> Built:
    """What a Lab trains for a spec: a fresh copy of its seeded model, the loss, the batches."""
    t = template(spec, seed, dtype)
    size = spec["batch_size"]
    batches: Batches
    if not spec["shuffle"]:
        batches = (
            FullBatch(t.x_train, t.y_train)
            if size >= len(t.y_train)
            else InOrder(t.x_train, t.y_train, size)
        )
    else:
        batches = Epochs(t.x_train, t.y_train, seed, size)
    draws = any(isinstance(m, nn.Dropout) and m.p > 0 for m in t.model.modules())
    return Built(
        fresh_copy(t.model),
        loss_fn(spec),
        batches,
        t.x_train,
        t.y_train,
        t.rng.clone() if draws else None,
        t.x_val,
        t.y_val,
        spec["task"],
        t.data.classes,
    )


# -- the scenarios as specs -------------------------------------------------------

SPEC_LR = 0.1  # a spec's lr when none is sent

# the POST /api/sessions bodies that make neuron and moons as models of one's own, bit for bit
# (tests/engine/test_spec.py holds them to the scenarios); the parabola stays its own kind
SCENARIO_SPECS: dict[str, dict[str, Any]] = {
    "neuron": {
        "model": [{"type": "Linear", "out_features": 1, "init": "zeros"}],
        "data": {"kind": "points", "X": [[1], [2], [3], [4]], "y": [2, 3, 5, 6]},
        "task": "regression",
        "loss": {"type": "MSELoss"},
        "validation": 0,
        "shuffle": False,
        "dtype": "float32",
        "lr": 0.05,
        "seed": 0,
    },
    "moons": {
        "model": [
            {"type": "Linear", "out_features": 16},
            {"type": "ReLU"},
            {"type": "Linear", "out_features": 16},
            {"type": "ReLU"},
            {"type": "Linear", "out_features": 2},
        ],
        "data": {
            "kind": "sklearn",
            "name": "make_moons",
            "args": {"n_samples": 200, "noise": 0.2, "random_state": 0},
        },
        "task": "classification",
        "loss": {"type": "CrossEntropyLoss"},
        "validation": 0.25,
        "batch_size": 32,
        "dtype": "float64",
        "lr": 0.3,
        "seed": 0,
    },
}
