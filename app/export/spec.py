"""A spec's data, model and loss written as plain code (issue 28): steps 1-5 of
docs/api.md#your-own-model-and-data, in the words the engine runs them (``app/spec/data.py``,
``app/spec/spec.py``), so the script computes the session's numbers bit for bit.

Nothing of the spec reaches the code but checked values: names from the engine's closed tables
(``LAYERS``, ``LOSSES``, ``SKLEARN``) and numbers, booleans and choices written with ``repr``;
a CSV's text as one string literal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from app.spec import data as data_
from app.spec.layers import LAYERS, LOSSES
from app.spec.spec import SpecJson, data_of, input_shapes

CSV_INLINE = 200 * 1024  # a CSV up to this many bytes is written into the script


def shuffled_batches(size: int) -> list[str]:
    """The script's ``batches()``: a fresh permutation of the training rows each epoch, as the
    engine's Epochs draws them (the scenarios' moons and a spec's shuffled data alike)."""
    return [
        "def batches():",
        f'    """Batches of {size} in a fresh order each epoch (one permutation per epoch)."""',
        "    rng = np.random.default_rng(seed)",
        "    n = len(y_train)",
        "    while True:",
        "        order = rng.permutation(n)",
        f"        for start in range(0, n, {size}):",
        f"            idx = torch.from_numpy(order[start : start + {size}])",
        "            yield X_train[idx], y_train[idx]",
    ]


@dataclass(frozen=True)
class SpecCode:
    lines: list[str]
    imports: list[str]
    streamed: bool  # batches come from a generator (else the full batch, X_train/y_train)
    batch_sizes: tuple[int, ...]  # the sizes a batch has (for accumulation's shares)
    words: str


def _value(value: Any) -> str:
    if isinstance(value, list):
        return "(" + ", ".join(map(_value, value)) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _layer(layer: dict[str, Any], shape: tuple[int, ...]) -> str:
    kind = LAYERS[layer["type"]]  # the type was checked against this table when it came
    kwargs = {**kind.defaults, **{k: v for k, v in layer.items() if k not in ("type", "init")}}
    if kind.inferred is not None and kind.inferred not in kwargs:
        if kind.inferred == "normalized_shape":
            kwargs["normalized_shape"] = [shape[-1]]
        else:
            kwargs[kind.inferred] = shape[-1] if kind.inferred == "in_features" else shape[0]
    args = ", ".join(
        f"{key}={_value(value)}"
        for key, value in kwargs.items()
        if key in kind.kwargs or key in kind.defaults
    )
    return f"nn.{kind.make.__name__}({args})"


def _init(i: int, layer: dict[str, Any]) -> list[str]:
    init = layer.get("init", "default")
    if init == "default":
        return []
    if init == "zeros":
        return [f"    for p in model[{i}].parameters(recurse=False):", "        p.zero_()"]
    return [
        f"    model[{i}].{key}.copy_(torch.tensor({values!r}, dtype=torch.float64))"
        for key, values in init.items()
        if key in ("weight", "bias")
    ]


def _rows(data: dict[str, Any], csv_text: str | None) -> tuple[list[str], list[str]]:
    """Step 1's rows as ``x`` (float64) and ``y`` (as given), and the imports they need."""
    kind = data["kind"]
    if kind == "sklearn":
        name = data["name"]
        if name not in data_.SKLEARN:
            raise ValueError(f"unknown scikit-learn function {name!r}")
        args = data_.check_args(name, data.get("args", {}), 2**62)
        call = ", ".join(f"{k}={v!r}" for k, v in args.items())
        if name.startswith("load_"):
            call = "return_X_y=True" + (", " + call if call else "")
        return [
            f"x, y = {name}({call})",
            "x = np.asarray(x, dtype=np.float64)",
            "y = np.asarray(y)",
        ], [f"from sklearn.datasets import {name}"]
    if kind == "points":
        ys = data["y"]
        text = all(isinstance(v, str) for v in ys)
        return [
            f"x = np.asarray({data['X']!r}, dtype=np.float64)",
            f"y = np.asarray({ys!r}, dtype={'object' if text else 'np.float64'})",
        ], []
    if kind == "csv":
        if csv_text is None:
            raise ValueError("the CSV file is not at hand")
        table = data_.table(data["dataset"])
        target = data["target"]
        features = data.get("features") or [
            c.name for c in table.columns if c.numeric and c.name != target
        ]
        numeric = table.column(target).numeric
        cell = f"float(row[{target!r}])" if numeric else f"row[{target!r}]"
        kind_of_y = "np.float64" if numeric else "object"
        read = (
            [f"DATA = {csv_text!r}", "rows = list(csv.DictReader(io.StringIO(DATA)))"]
            if len(csv_text.encode()) <= CSV_INLINE
            else [
                f"with open({data['dataset'] + '.csv'!r}, newline='', encoding='utf-8-sig') as f:"
                "  # GET /api/datasets/{id}/file, beside this script",
                "    rows = list(csv.DictReader(f))",
            ]
        )
        return [
            *read,
            "rows = [{k.strip(): v.strip() for k, v in row.items()} for row in rows]",
            f"features = {features!r}",
            "x = np.asarray([[float(row[f]) for f in features] for row in rows], np.float64)",
            f"y = np.asarray([{cell} for row in rows], dtype={kind_of_y})",
        ], ["import csv", "import io"]
    raise ValueError(f"unknown data kind {kind!r}")


def code(spec_json: dict[str, Any], seed: int, dtype: str, csv_text: str | None) -> SpecCode:
    """The script's data, model and loss lines for a spec (a log's, checked when it came)."""
    spec = cast(SpecJson, spec_json)
    if dtype not in ("float32", "float64"):
        raise ValueError(f"unknown dtype {dtype!r}")
    rows, imports = _rows(spec["data"], csv_text)
    classify = spec["task"] == "classification"
    torch_dtype = f"torch.{dtype}"
    lines = [f"seed = {int(seed)}", *rows]
    if classify:
        lines.append("classes, y = np.unique(y, return_inverse=True)  # class indices, sorted")
        lines.append("y = y.astype(np.int64)")
    else:
        lines.append("y = y.astype(np.float64).reshape(-1, 1)  # a column, as the output")
    validation = float(spec["validation"])
    if validation > 0:
        stratify = "y" if classify else "None"
        lines += [
            "x_train, x_val, y_train, y_val = train_test_split(",
            f"    x, y, test_size={validation!r}, stratify={stratify}, random_state=seed",
            ")",
        ]
        imports.append("from sklearn.model_selection import train_test_split")
    else:
        lines.append("x_train, y_train = x, y  # no validation split")
    if spec["standardize"]:
        lines += [
            "mean, std = x_train.mean(axis=0), x_train.std(axis=0)  # ddof 0",
            "std = np.where(std == 0, 1.0, std)  # a constant feature stays as it is",
            "x_train = (x_train - mean) / std",
        ]
    lines.append(f"X_train = torch.tensor(x_train).to({torch_dtype})")
    loss = spec["loss"]
    if not classify:
        lines.append(f"y_train = torch.tensor(y_train).to({torch_dtype})")
    elif loss["type"] == "BCEWithLogitsLoss":
        lines.append(f"y_train = torch.tensor(y_train).to({torch_dtype}).reshape(-1, 1)")
    else:
        lines.append("y_train = torch.tensor(y_train)")
    features = data_of(spec, seed).x_train.shape[1]
    shapes = input_shapes(spec["model"], features)
    layers = [_layer(layer, shapes[i]) for i, layer in enumerate(spec["model"])]
    lines += [
        "torch.manual_seed(seed)  # right before the model is built",
        "model = nn.Sequential(",
        *[f"    {layer}," for layer in layers],
        f").to({torch_dtype})",
    ]
    inits = [line for i, layer in enumerate(spec["model"]) for line in _init(i, layer)]
    if inits:
        lines += ["with torch.no_grad():  # the layers' init", *inits]
    kind = LOSSES[loss["type"]]
    kwargs = ", ".join(f"{k}={v!r}" for k, v in loss.items() if k in kind.kwargs)
    lines.append(f"loss_fn = nn.{kind.make.__name__}({kwargs})")
    size = int(spec["batch_size"])
    n = len(data_of(spec, seed).y_train)
    streamed = True
    if spec["shuffle"]:
        lines += [
            "",
            "",
            *shuffled_batches(size),
        ]
    elif size < n:
        lines += [
            "",
            "",
            "def batches():",
            f'    """Batches of {size} in the rows\' own order, over and over."""',
            "    n = len(y_train)",
            "    while True:",
            f"        for start in range(0, n, {size}):",
            f"            yield X_train[start : start + {size}], y_train[start : start + {size}]",
        ]
    else:
        streamed = False
    sizes = (min(size, n),) if n % size == 0 or size >= n else (size, n % size)
    words = (
        f"Your own model: {len(layers)} layers, {spec['task']}, {loss['type']}, "
        f"batches of {size}, validation {validation!r}, standardize {spec['standardize']}."
    )
    return SpecCode(lines, ["import numpy as np", *imports], streamed, sizes, words)
