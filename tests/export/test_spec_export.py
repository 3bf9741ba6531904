"""The export of sessions on your own model and data (issue 28): the script and the notebook
build the same data (the scikit-learn call written out, inline points as a literal, a CSV's
text inside) and the model from its layer list, and run to the Lab's numbers bit for bit."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from app import export
from app.engine.program import NO_BUGS, program_for
from app.spec.spec import SpecLimits, normalize
from app.spec.tables import TABLES
from tests.export.test_export import Recorder, check_all

pytestmark = pytest.mark.usefixtures("server_threads")  # the Labs compute as the server does

CSV = "size, colour ,price\n1.5,red,3\n2,blue,4.25\n3.5,red,7\n4,blue,8.5\n5,red,10\n6,blue,12.5\n"


def custom(
    body: dict[str, Any],
    *,
    seed: int = 0,
    lr: float = 0.1,
    accumulate: int = 1,
    dtype: str = "float32",
    optimizer: dict[str, Any] | None = None,
) -> Recorder:
    spec = normalize(body, seed, SpecLimits())
    setup = {
        "scenario": "custom",
        "lr": lr,
        "seed": seed,
        "optimizer": optimizer or {"kind": "sgd", "momentum": 0.0, "weight_decay": 0.0},
        "accumulate": accumulate,
        "options": {},
        "program": program_for(NO_BUGS, accumulate),
        "dtype": dtype,
        "spec": dict(spec),
    }
    return Recorder(setup)


def test_specs_export_to_the_labs_numbers(tmp_path: Path) -> None:
    body = CSV.encode()
    TABLES.remember(hashlib.sha256(body).hexdigest(), body)
    digits = custom(
        {
            "model": [
                {"type": "Linear", "out_features": 32},
                {"type": "LayerNorm"},
                {"type": "GELU"},
                {"type": "Dropout", "p": 0.25},
                {"type": "Linear", "out_features": 10},
            ],
            "data": {"kind": "sklearn", "name": "load_digits", "args": {}},
            "standardize": True,
            "batch_size": 50,
            "loss": {"type": "CrossEntropyLoss", "label_smoothing": 0.1},
        },
        accumulate=2,
        optimizer={"kind": "adam", "betas": [0.9, 0.99], "weight_decay": 0.01},
    )
    points = custom(
        {
            "model": [
                {"type": "Linear", "out_features": 1, "init": {"weight": [[0.5]], "bias": [1.0]}}
            ],
            "data": {"kind": "points", "X": [[1], [2], [3], [4], [5]], "y": [2.0, 3.5, 5, 6, 8.25]},
            "task": "regression",
            "validation": 0,
            "shuffle": False,
            "loss": {"type": "HuberLoss", "delta": 0.5},
        },
        dtype="float64",
        lr=0.05,
    )
    table = custom(
        {
            "model": [
                {"type": "Linear", "out_features": 4},
                {"type": "Tanh"},
                {"type": "Linear", "out_features": 1},
            ],
            "data": {
                "kind": "csv",
                "dataset": hashlib.sha256(body).hexdigest(),
                "target": "colour",
            },
            "loss": {"type": "BCEWithLogitsLoss"},
            "validation": 0.33,
            "batch_size": 2,
            "shuffle": False,
        },
    )
    conv = custom(
        {
            "model": [
                {"type": "Unflatten", "dim": 1, "unflattened_size": [1, 8, 8]},
                {"type": "Conv2d", "out_channels": 4, "kernel_size": 3, "padding": 1},
                {"type": "BatchNorm2d"},
                {"type": "ReLU"},
                {"type": "AvgPool2d", "kernel_size": 2},
                {"type": "Flatten"},
                {"type": "Linear", "out_features": 3},
                {"type": "LogSoftmax"},
            ],
            "data": {"kind": "sklearn", "name": "load_digits", "args": {"n_class": 3}},
            "loss": {"type": "NLLLoss"},
            "batch_size": 64,
        },
        seed=3,
    )
    recs = [digits, points, table, conv]
    for rec in recs:
        rec.run(4)
    check_all(recs, tmp_path, notebook=True)
    source = export.script(digits.setup, digits.events, threads=1)
    assert "x, y = load_digits(return_X_y=True)" in source
    assert "nn.LayerNorm(normalized_shape=(32,))" in source
    assert "nn.CrossEntropyLoss(label_smoothing=0.1)" in source
    csv_source = export.script(table.setup, table.events, threads=1)
    assert (
        repr(CSV) in csv_source and "classes, y = np.unique(y, return_inverse=True)" in csv_source
    )
