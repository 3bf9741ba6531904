"""Random specs against the plain PyTorch oracle (issue 28): layer lists from the allowlist,
every kind of data, every loss, both dtypes, random programs of the lesson's lines; the
params, ``.grad`` and loss equal bit for bit, and the export of each runs to the same numbers.
And any spec at all is refused with a ``SpecError`` or taken: never another exception."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.errors import LineError
from app.engine.lab import Lab
from app.engine.optimizers import OptimizerSpec
from app.engine.setup import Setup
from app.spec.data import SpecError
from app.spec.layers import LAYERS, LOSSES
from app.spec.spec import SpecLimits, check, normalize
from app.spec.tables import TABLES
from support.spec_oracle import Plain
from tests.export.test_export import Recorder, check_all

pytestmark = pytest.mark.usefixtures("server_threads")

CSV = "a,b,c,label\n" + "".join(
    f"{i % 7 * 0.5},{(i * 3) % 11 - 5},{i / 10},{'yes' if (i * 7) % 5 < 2 else 'no'}\n"
    for i in range(40)
)
CSV_ID = hashlib.sha256(CSV.encode()).hexdigest()
ACTIVATIONS = [
    {"type": "ReLU"},
    {"type": "LeakyReLU", "negative_slope": 0.1},
    {"type": "ELU"},
    {"type": "GELU", "approximate": "tanh"},
    {"type": "SiLU"},
    {"type": "Tanh"},
    {"type": "Sigmoid"},
    {"type": "Identity"},
]
EXTRAS = [[], [{"type": "Dropout", "p": 0.3}], [{"type": "BatchNorm1d"}], [{"type": "LayerNorm"}]]
DATA = {
    # (data, classes or None for a regression, features)
    "moons": (
        {"kind": "sklearn", "name": "make_moons", "args": {"n_samples": 60, "noise": 0.1}},
        2,
        2,
    ),
    "blobs": (
        {
            "kind": "sklearn",
            "name": "make_blobs",
            "args": {"n_samples": 60, "centers": 3, "n_features": 3, "random_state": 1},
        },
        3,
        3,
    ),
    "iris": ({"kind": "sklearn", "name": "load_iris", "args": {}}, 3, 4),
    "regression": (
        {
            "kind": "sklearn",
            "name": "make_regression",
            "args": {"n_samples": 50, "n_features": 2, "noise": 1.0, "random_state": 2},
        },
        None,
        2,
    ),
    "points": (
        {
            "kind": "points",
            "X": [[i / 4, (i * 5) % 3] for i in range(12)],
            "y": [i * 0.7 - 2 for i in range(12)],
        },
        None,
        2,
    ),
    "csv": (
        {"kind": "csv", "dataset": CSV_ID, "target": "label", "features": ["a", "b", "c"]},
        2,
        3,
    ),
}


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(sorted(DATA)))
    data, classes, features = DATA[name]
    layers: list[dict[str, Any]] = []
    if draw(st.booleans()):  # a convolution over the features as a sequence
        layers += [
            {"type": "Unflatten", "dim": 1, "unflattened_size": [1, features]},
            {"type": "Conv1d", "out_channels": 2, "kernel_size": 2},
            {"type": "ReLU"},
            {"type": "Flatten"},
        ]
    for _ in range(draw(st.integers(0, 2))):
        layers.append({"type": "Linear", "out_features": draw(st.integers(1, 6))})
        layers += draw(st.sampled_from(EXTRAS))
        layers.append(draw(st.sampled_from(ACTIVATIONS)))
    loss: dict[str, Any]
    if classes is None:
        loss = draw(
            st.sampled_from(
                [
                    {"type": "MSELoss"},
                    {"type": "L1Loss"},
                    {"type": "SmoothL1Loss", "beta": 0.5},
                    {"type": "HuberLoss", "delta": 2.0, "reduction": "sum"},
                ]
            )
        )
        out = 1
    else:
        kinds = ["CrossEntropyLoss", "NLLLoss"] + ["BCEWithLogitsLoss"] * (classes == 2)
        kind = draw(st.sampled_from(kinds))
        loss = {"type": kind}
        if kind == "CrossEntropyLoss" and draw(st.booleans()):
            loss["label_smoothing"] = 0.1
        out = 1 if kind == "BCEWithLogitsLoss" else classes
    last: dict[str, Any] = {"type": "Linear", "out_features": out}
    if draw(st.booleans()):
        last["init"] = "zeros"
    layers.append(last)
    if loss["type"] == "NLLLoss":
        layers.append({"type": "LogSoftmax"})
    return {
        "model": layers,
        "data": data,
        "loss": loss,
        "task": "regression" if classes is None else "classification",
        "validation": draw(st.sampled_from([0.0, 0.25])),
        "batch_size": draw(st.integers(3, 40)),
        "standardize": draw(st.booleans()),
        "shuffle": draw(st.booleans()),
    }


LINES = st.lists(
    st.sampled_from(["forward", "loss", "zero_grad", "backward", "step"]), min_size=1, max_size=12
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=specs(),
    program=LINES,
    seed=st.integers(0, 3),
    dtype=st.sampled_from(["float32", "float64"]),
    adam=st.booleans(),
)
def test_random_specs_equal_plain_pytorch(
    body: dict[str, Any], program: list[str], seed: int, dtype: str, adam: bool
) -> None:
    TABLES.remember(CSV_ID, CSV.encode())
    spec = normalize(body, seed, SpecLimits())
    check(spec, seed, SpecLimits())
    optimizer = OptimizerSpec("adam") if adam else OptimizerSpec("sgd", momentum=0.9)
    lab = Lab(Setup("custom", 0.05, seed, optimizer, dtype=dtype, spec=dict(spec)))
    kind = torch.float32 if dtype == "float32" else torch.float64
    plain = Plain(
        dict(spec), seed, kind, 0.05, {"kind": "adam" if adam else "sgd", "momentum": 0.9}, CSV
    )
    for entry in program:
        try:
            lab.run_line(entry)
            ran = True
        except LineError:
            ran = False
        try:
            plain.line(entry)
            assert ran, f"the Lab refused {entry}, plain PyTorch ran it"
        except (RuntimeError, ValueError):  # PyTorch refused it (BatchNorm on a batch of one)
            assert not ran, f"plain PyTorch refused {entry}, the Lab ran it"
    assert lab.loss_value == (None if plain.loss is None else plain.loss.item()), (body, program)
    for (name, p), q in zip(lab.named.items(), plain.model.parameters(), strict=True):
        assert torch.equal(p, q), name
        assert (p.grad is None) == (q.grad is None), name
        assert p.grad is None or q.grad is None or torch.equal(p.grad, q.grad), name


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(body=specs(), seed=st.integers(0, 3))
def test_the_export_of_random_specs_runs_to_the_same_numbers(
    body: dict[str, Any], seed: int, tmp_path: Path
) -> None:
    TABLES.remember(CSV_ID, CSV.encode())
    spec = normalize(body, seed, SpecLimits())
    setup = {
        "scenario": "custom",
        "lr": 0.05,
        "seed": seed,
        "accumulate": 1,
        "options": {},
        "optimizer": {"kind": "sgd", "momentum": 0.0, "weight_decay": 0.0},
        "program": ["zero_grad", "forward", "loss", "backward", "step"],
        "dtype": "float32",
        "spec": dict(spec),
    }
    rec = Recorder(setup)
    rec.run(3)
    check_all([rec], tmp_path)


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True)
    | st.text(max_size=5)
    | st.sampled_from(list(LAYERS) + list(LOSSES) + ["sklearn", "points", "csv", "make_moons"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "kind",
                    "name",
                    "args",
                    "X",
                    "y",
                    "out_features",
                    "in_features",
                    "kernel_size",
                    "dim",
                    "unflattened_size",
                    "p",
                    "init",
                    "n_samples",
                    "target",
                    "dataset",
                    "weight",
                    "bias",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(model=JSONISH, data=JSONISH, loss=JSONISH)
def test_any_spec_is_taken_or_refused_with_a_spec_error(model: Any, data: Any, loss: Any) -> None:
    body = {"model": model, "data": data, "loss": loss}
    try:
        spec = normalize(body, 0, SpecLimits())
        check(spec, 0, SpecLimits())
    except SpecError as e:
        assert e.loc[0] == "body" and e.message


def test_batchnorm_on_a_batch_of_one_is_pytorchs_refusal_not_a_crash() -> None:
    """41 points in batches of 40: the second batch is one row, and BatchNorm1d in training
    refuses it with a ValueError; the line answers it in PyTorch's words (a 409), and the next
    batch runs."""
    body = {
        "model": [{"type": "Linear", "out_features": 4}, {"type": "BatchNorm1d"},
                  {"type": "Linear", "out_features": 2}],
        "data": {"kind": "sklearn", "name": "make_moons", "args": {"n_samples": 41}},
        "batch_size": 40, "validation": 0.0, "shuffle": False,
    }  # fmt: skip
    spec = normalize(body, 0, SpecLimits())
    lab = Lab(Setup("custom", 0.05, 0, OptimizerSpec(), spec=dict(spec)))
    lab.run_line("forward")
    with pytest.raises(LineError, match="Expected more than 1 value per channel") as refused:
        lab.run_line("forward")
    assert refused.value.torch_error and refused.value.line == "forward"
    lab.run_line("forward")
    assert lab.iteration == 2
