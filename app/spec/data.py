"""A spec's data (issue 28): scikit-learn's sets, inline points or a CSV, split and scaled.

Steps 1-3 of docs/api.md#your-own-model-and-data, in plain NumPy and scikit-learn, so the
export and anyone's own script can say the same: the rows as float64, classification targets
as int64 class indices (the sorted distinct values), regression targets as a float64 column;
``train_test_split`` (stratified for classification) when ``validation > 0``; the training
split's mean and population std (ddof 0) applied to both splits when ``standardize``.

Everything a user sends is checked against closed tables here (``SKLEARN``: which functions,
which arguments, their bounds); nothing is looked up by a user's string outside them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.spec.tables import TABLES, Table

MAX_POINTS = 1_000  # inline rows: more is a CSV's job
MAX_CLASSES = 20  # an integer or text target with at most this many values is a class label
INTEGER = re.compile(r"[+-]?[0-9]+")  # a CSV value written as an integer


class SpecError(ValueError):
    """A spec refused: what is wrong and where (``loc``: the path in the request body, FastAPI's
    way, e.g. ``("body", "model", 3)``)."""

    def __init__(self, message: str, loc: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.message, self.loc = message, ("body", *loc)


@dataclass(frozen=True)
class Arg:
    kind: type  # int, float or bool
    lo: float = -math.inf
    hi: float = math.inf


def _n(hi: int = 100_000) -> Arg:
    return Arg(int, 1, hi)


SEED = Arg(int, 0, 2**32 - 1)
NOISE = Arg(float, 0, 100)
SHUFFLE = Arg(bool)

# scikit-learn's functions a spec may call, each with the arguments it may pass (their own
# names); ``n_samples`` is also held to the rows bound of the settings
SKLEARN: dict[str, dict[str, Arg]] = {
    "make_moons": {"n_samples": _n(), "noise": NOISE, "random_state": SEED, "shuffle": SHUFFLE},
    "make_circles": {
        "n_samples": _n(),
        "noise": NOISE,
        "factor": Arg(float, 0, 0.999999),
        "random_state": SEED,
        "shuffle": SHUFFLE,
    },
    "make_blobs": {
        "n_samples": _n(),
        "n_features": _n(1024),
        "centers": _n(MAX_CLASSES),
        "cluster_std": Arg(float, 0, 100),
        "random_state": SEED,
        "shuffle": SHUFFLE,
    },
    "make_classification": {
        "n_samples": _n(),
        "n_features": _n(1024),
        "n_informative": _n(1024),
        "n_redundant": Arg(int, 0, 1024),
        "n_repeated": Arg(int, 0, 1024),
        "n_classes": Arg(int, 2, MAX_CLASSES),
        "n_clusters_per_class": _n(16),
        "flip_y": Arg(float, 0, 1),
        "class_sep": Arg(float, 0, 100),
        "hypercube": Arg(bool),
        "random_state": SEED,
        "shuffle": SHUFFLE,
    },
    "make_regression": {
        "n_samples": _n(),
        "n_features": _n(1024),
        "n_informative": _n(1024),
        "bias": Arg(float, -1e6, 1e6),
        "noise": Arg(float, 0, 1e6),
        "random_state": SEED,
        "shuffle": SHUFFLE,
    },
    "load_iris": {},
    "load_digits": {"n_class": Arg(int, 2, 10)},
    "load_wine": {},
    "load_breast_cancer": {},
    "load_diabetes": {"scaled": Arg(bool)},
}


def _sklearn_function(name: str) -> Callable[..., Any]:
    """The function for a name of ``SKLEARN`` (the import is here: scikit-learn is slow to load
    and only specs need it)."""
    from sklearn import datasets

    functions: dict[str, Callable[..., Any]] = {
        "make_moons": datasets.make_moons,
        "make_circles": datasets.make_circles,
        "make_blobs": datasets.make_blobs,
        "make_classification": datasets.make_classification,
        "make_regression": datasets.make_regression,
        "load_iris": datasets.load_iris,
        "load_digits": datasets.load_digits,
        "load_wine": datasets.load_wine,
        "load_breast_cancer": datasets.load_breast_cancer,
        "load_diabetes": datasets.load_diabetes,
    }
    return functions[name]


def check_args(name: str, args: Any, max_rows: int) -> dict[str, int | float | bool]:
    """The arguments as the function gets them, each of its table and in bounds."""
    allowed = SKLEARN[name]
    if not isinstance(args, dict):
        raise SpecError("args: an object of the function's arguments", ("data", "args"))
    checked: dict[str, int | float | bool] = {}
    for key, value in args.items():
        where = ("data", "args", key)
        if key not in allowed:
            known = ", ".join(allowed) or "none"
            raise SpecError(f"{name} takes no argument {key!r} here (it takes: {known})", where)
        arg = allowed[key]
        if arg.kind is bool:
            if not isinstance(value, bool):
                raise SpecError(f"{key}: true or false", where)
            checked[key] = value
            continue
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if arg.kind is int and ok and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not ok or (arg.kind is int and not isinstance(value, int)) or not math.isfinite(value):
            raise SpecError(f"{key}: {'an integer' if arg.kind is int else 'a number'}", where)
        if not arg.lo <= value <= arg.hi:
            raise SpecError(f"{key}: from {_num(arg.lo)} to {_num(arg.hi)}, not {value}", where)
        checked[key] = value
    if int(checked.get("n_samples", 0)) > max_rows:
        raise SpecError(f"n_samples: at most {max_rows} rows", ("data", "args", "n_samples"))
    return checked


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# -- the raw rows ---------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """The rows as step 1 reads them: X (n, f) float64, and the target as given."""

    x: np.ndarray
    y: np.ndarray  # numbers (float64) or texts (object)
    features: list[str]
    integer: bool = False  # the target is written as integers (no point, no exponent)


def sklearn_rows(name: str, args: dict[str, int | float | bool]) -> Raw:
    function = _sklearn_function(name)
    if name.startswith("load_"):
        x, y = function(return_X_y=True, **args)
    else:
        x, y = function(**args)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y)
    return Raw(x, y, [f"x{i}" for i in range(x.shape[1])], y.dtype.kind in "iu")


def points_rows(data: dict[str, Any], max_features: int) -> Raw:
    xs, ys = data.get("X"), data.get("y")
    if not isinstance(xs, list) or not xs:
        raise SpecError("X: a list of rows, each a list of numbers", ("data", "X"))
    if len(xs) > MAX_POINTS:
        raise SpecError(f"X: at most {MAX_POINTS} inline rows (a CSV takes more)", ("data", "X"))
    if not isinstance(ys, list) or len(ys) != len(xs):
        raise SpecError(f"y: a list of {len(xs)} targets, one per row of X", ("data", "y"))
    width = len(xs[0]) if isinstance(xs[0], list) else 0
    if not 1 <= width <= max_features:
        raise SpecError(f"X: rows of 1 to {max_features} numbers", ("data", "X", 0))
    for i, row in enumerate(xs):
        if not isinstance(row, list) or len(row) != width or not all(map(_finite, row)):
            raise SpecError(f"row {i} of X: {width} finite numbers", ("data", "X", i))
    if all(map(_finite, ys)):
        y = np.asarray(ys, dtype=np.float64)
    elif all(isinstance(v, str) and 0 < len(v) <= 100 for v in ys):
        y = np.asarray(ys, dtype=object)
    else:
        raise SpecError("y: all numbers, or all class names (texts)", ("data", "y"))
    x = np.asarray(xs, dtype=np.float64)
    integer = all(isinstance(v, int) and not isinstance(v, bool) for v in ys)
    return Raw(x, y, [f"x{i}" for i in range(width)], integer)


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def csv_rows(table: Table, target: Any, features: Any) -> Raw:
    if not isinstance(target, str) or target not in table.names:
        raise SpecError(
            f"target: one of the columns ({', '.join(table.names)})", ("data", "target")
        )
    column = table.column(target)
    y = table.numbers(target) if column.numeric else np.asarray(table.texts(target), object)
    if features is None:
        names = [c.name for c in table.columns if c.numeric and c.name != target]
        if not names:
            raise SpecError("the file has no numeric column beside the target", ("data",))
    else:
        if not isinstance(features, list) or not features:
            raise SpecError("features: a list of column names", ("data", "features"))
        names = []
        for i, name in enumerate(features):
            where = ("data", "features", i)
            if not isinstance(name, str) or name not in table.names:
                raise SpecError(f"features: no column {str(name)[:40]!r}", where)
            if name == target:
                raise SpecError(f"features: {name!r} is the target", where)
            if not table.column(name).numeric:
                raise SpecError(f"features: column {name!r} is not numeric", where)
            names.append(name)
    x = np.stack([table.numbers(n) for n in names], axis=1).astype(np.float64)
    integer = column.numeric and all(INTEGER.fullmatch(v) for v in table.texts(target))
    return Raw(x, y, names, integer)


# -- the CSV files a spec may name ---------------------------------------------


def table(dataset_id: str) -> Table:
    """The uploaded CSV file ``dataset_id``, as the sessions layer put it in ``TABLES``."""
    found = TABLES.get(dataset_id)
    if found is None:
        raise SpecError(f"no dataset {dataset_id[:64]!r}", ("data", "dataset"))
    return found


# -- steps 1-3 --------------------------------------------------------------------


@dataclass(frozen=True)
class Data:
    """The splits as NumPy (read-only) and what the task made of the target."""

    x_train: np.ndarray
    y_train: np.ndarray  # int64 class indices, or float64 (n, 1)
    x_val: np.ndarray | None
    y_val: np.ndarray | None
    task: str  # "regression" | "classification"
    classes: list[str] | None  # the class names in index order
    features: list[str]


def raw_rows(data: Any, max_rows: int, max_features: int) -> Raw:
    """Step 1's rows for a ``data`` object of the spec."""
    if not isinstance(data, dict):
        raise SpecError("data: an object with a kind: sklearn, points or csv", ("data",))
    kind = data.get("kind")
    if kind == "sklearn":
        name = data.get("name")
        if not isinstance(name, str) or name not in SKLEARN:
            raise SpecError(f"name: one of {', '.join(SKLEARN)}", ("data", "name"))
        rows = sklearn_rows(name, check_args(name, data.get("args", {}), max_rows))
    elif kind == "points":
        rows = points_rows(data, max_features)
    elif kind == "csv":
        dataset = data.get("dataset")
        if not isinstance(dataset, str):
            raise SpecError("dataset: the id POST /api/datasets answered", ("data", "dataset"))
        rows = csv_rows(table(dataset), data.get("target"), data.get("features"))
    else:
        raise SpecError("kind: sklearn, points or csv", ("data", "kind"))
    n, f = rows.x.shape
    if n > max_rows:
        raise SpecError(f"{n} rows: at most {max_rows}", ("data",))
    if f > max_features:
        raise SpecError(f"{f} features: at most {max_features}", ("data",))
    return rows


def infer_task(raw: Raw) -> str:
    """Classification for a text target, or an integer one (integers as written: ``3``, not
    ``3.0``; scikit-learn's int labels) with at most 20 distinct values; else regression."""
    if raw.y.dtype == object:
        return "classification"
    if raw.integer and len(np.unique(raw.y)) <= MAX_CLASSES:
        return "classification"
    return "regression"


def targets(raw: Raw, task: str) -> tuple[np.ndarray, list[str] | None]:
    """Class indices (int64, classes in sorted order) or a float64 column."""
    if task == "classification":
        values, index = np.unique(raw.y, return_inverse=True)
        if len(values) > MAX_CLASSES * 5:  # 100: a class per row is not a classification
            raise SpecError(f"{len(values)} classes: at most {MAX_CLASSES * 5}", ("task",))
        if len(values) < 2:
            raise SpecError("a classification needs at least 2 classes", ("task",))
        return index.astype(np.int64), [_name(v) for v in values]
    if raw.y.dtype == object:
        raise SpecError("a text target is a classification's, not a regression's", ("task",))
    return raw.y.astype(np.float64).reshape(-1, 1), None


def _name(value: Any) -> str:
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def split(
    x: np.ndarray, y: np.ndarray, validation: float, seed: int, task: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Step 2: ``train_test_split`` as the spec says, or every row for training."""
    if validation == 0:
        return x, y, None, None
    from sklearn.model_selection import train_test_split

    try:
        x_train, x_val, y_train, y_val = train_test_split(
            x,
            y,
            test_size=validation,
            stratify=y if task == "classification" else None,
            random_state=seed,
        )
    except ValueError as e:  # too few rows of a class to stratify, a split of no rows
        raise SpecError(f"validation {validation}: {e}", ("validation",)) from e
    return x_train, y_train, x_val, y_val


def standardize(x_train: np.ndarray, x_val: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """Step 3: the training split's mean and population std (ddof 0; a constant feature's std
    of 0 is taken as 1), applied to both splits."""
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    std = np.where(std == 0, 1.0, std)
    scaled = (x_train - mean) / std
    return (scaled,) if x_val is None else (scaled, (x_val - mean) / std)


def build_data(raw: Raw, task: str, validation: float, seed: int, scale: bool) -> Data:
    y, classes = targets(raw, task)
    x_train, y_train, x_val, y_val = split(raw.x, y, validation, seed, task)
    if scale:
        scaled = standardize(x_train, x_val)
        x_train = scaled[0]
        x_val = None if x_val is None else scaled[1]
    for array in (x_train, y_train, x_val, y_val):
        if array is not None:
            array.flags.writeable = False
    return Data(x_train, y_train, x_val, y_val, task, classes, raw.features)
