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
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NotRequired, TypedDict

import numpy as np
import torch
from torch import nn

from app.spec import data as data_
from app.spec import shapes as dry
from app.spec.batches import Batches, Epochs, FullBatch, InOrder
from app.spec.built import Built, fresh_copy
from app.spec.data import Data, SpecError
from app.spec.layers import finite_number, loss_fn, normalize_layer, normalize_loss
from app.spec.shapes import shape_text
from app.torchlock import TORCH_LOCK

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
    if not finite_number(validation) or not 0 <= validation < 1:
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


class PreviewJson(TypedDict):
    """A look at the training rows for the page: a scatter of the first 300 (2 features),
    8 x 8 images of the first 16 (64 features: digits), else the first 5 rows."""

    kind: str  # "scatter" | "images" | "rows"
    features: list[str]
    rows: list[list[float]]
    targets: list[float | str]


class CheckJson(TypedDict):
    layers: list[dry.LayerJson]
    params: int
    preview: PreviewJson
    input_shape: list[int | None]
    task: str
    classes: int | None
    rows: dict[str, int]
    warnings: NotRequired[list[str]]


def _fits_task(spec: SpecJson, out: tuple[int, ...], data: Data) -> None:
    """The model's output must be what the loss needs of it."""
    loss = spec["loss"]["type"]
    where = ("model", len(spec["model"]) - 1)
    if spec["task"] == "regression":
        if out != (1,):
            raise SpecError(
                f"the model's output is {shape_text(out)}: a regression needs (1,)", where
            )
        return
    classes = len(data.classes or [])
    if loss == "BCEWithLogitsLoss":
        if classes != 2 or out != (1,):
            raise SpecError(
                f"BCEWithLogitsLoss: two classes and an output of (1,), not {classes} and "
                f"{shape_text(out)}",
                where,
            )
    elif out != (classes,):
        raise SpecError(
            f"the model's output is {shape_text(out)}: {classes} classes need ({classes},)", where
        )


def check(spec: SpecJson, seed: int, limits: SpecLimits) -> CheckJson:
    """The spec built dry: each layer's output shape and parameters; refused past the bounds
    or where the output does not fit the loss."""
    data = data_of(spec, seed)
    features = data.x_train.shape[1]
    shown, _ = dry.run_dry(spec["model"], features, limits.params)
    total = sum(layer["params"] for layer in shown)
    out = tuple(x for x in shown[-1]["output_shape"] if x is not None)
    _fits_task(spec, out, data)
    for i, layer in enumerate(spec["model"]):
        made = dry.make(i, layer, _input_shape(shown, i, features), meta=True)
        dry.initialise(i, layer, made, dry=True)
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
    return dry.run_dry(model, features, 2**62)[1]


def preview(data: Data) -> PreviewJson:
    x, y = data.x_train, data.y_train
    f = x.shape[1]
    kind, n = ("scatter", 300) if f == 2 else ("images", 16) if f == 64 else ("rows", 5)
    names = data.classes
    targets: list[float | str] = (
        [names[int(i)] for i in y[:n]] if names is not None else y[:n].flatten().tolist()
    )
    return {"kind": kind, "features": data.features, "rows": x[:n].tolist(), "targets": targets}


def _input_shape(shown: list[dry.LayerJson], i: int, features: int) -> tuple[int, ...]:
    if i == 0:
        return (features,)
    return tuple(x for x in shown[i - 1]["output_shape"] if x is not None)


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


@lru_cache(maxsize=64)  # read-only and copied per session (built.fresh_copy)
def _template(spec_json: str, seed: int, dtype: str) -> Template:
    spec: SpecJson = json.loads(spec_json)
    data = data_of(spec, seed)
    kind = DTYPES[dtype]
    inputs = input_shapes(spec["model"], data.x_train.shape[1])
    with TORCH_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # right before the model is built, as step 4 says
        layers = [dry.make(i, layer, inputs[i]) for i, layer in enumerate(spec["model"])]
        model = nn.Sequential(*layers).to(kind)
        rng = torch.get_rng_state()
    for i, (layer, module) in enumerate(zip(spec["model"], layers, strict=True)):
        dry.initialise(i, layer, module)
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
        loss_fn(spec["loss"]),
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
