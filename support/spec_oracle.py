"""Plain PyTorch, NumPy and scikit-learn written from the five steps of
docs/api.md#your-own-model-and-data, and nothing of app/: the oracle a spec's Lab is held to.

``Plain(spec, seed, dtype, lr, optimizer)`` builds the data, the model and the loss as the
steps say and runs the lesson's lines on them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import sklearn.datasets
import torch
from sklearn.model_selection import train_test_split
from torch import nn

INFERRED = {
    "Linear": "in_features",
    "Conv1d": "in_channels",
    "Conv2d": "in_channels",
    "BatchNorm1d": "num_features",
    "BatchNorm2d": "num_features",
    "LayerNorm": "normalized_shape",
}


def rows(data: dict[str, Any], csv_text: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Step 1's X (float64) and y as given."""
    if data["kind"] == "sklearn":
        function = getattr(sklearn.datasets, data["name"])  # a test's own, fixed names
        args = dict(data.get("args", {}))
        if data["name"].startswith("load_"):
            args["return_X_y"] = True
        x, y = function(**args)
        return np.asarray(x, dtype=np.float64), np.asarray(y)
    if data["kind"] == "points":
        ys = data["y"]
        kind = object if isinstance(ys[0], str) else np.float64
        return np.asarray(data["X"], dtype=np.float64), np.asarray(ys, dtype=kind)
    assert csv_text is not None
    table = [
        {k.strip(): v.strip() for k, v in r.items()} for r in csv.DictReader(io.StringIO(csv_text))
    ]
    target = data["target"]
    features = data["features"]
    x = np.asarray([[float(r[f]) for f in features] for r in table], dtype=np.float64)
    try:
        y = np.asarray([float(r[target]) for r in table], dtype=np.float64)
    except ValueError:
        y = np.asarray([r[target] for r in table], dtype=object)
    return x, y


def layer(spec: dict[str, Any], shape: tuple[int, ...]) -> nn.Module:
    kwargs = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in spec.items()
        if k not in ("type", "init")
    }
    name = spec["type"]
    if name in ("Softmax", "LogSoftmax"):
        kwargs.setdefault("dim", 1)
    inferred = INFERRED.get(name)
    if inferred == "normalized_shape":
        kwargs.setdefault(inferred, (shape[-1],))
    elif inferred == "in_features":
        kwargs.setdefault(inferred, shape[-1])
    elif inferred is not None:
        kwargs.setdefault(inferred, shape[0])
    made: nn.Module = getattr(nn, name)(**kwargs)
    return made


class Plain:
    def __init__(
        self,
        spec: dict[str, Any],
        seed: int,
        dtype: torch.dtype,
        lr: float,
        optimizer: dict[str, Any],
        csv_text: str | None = None,
    ) -> None:
        x, y = rows(spec["data"], csv_text)
        classify = spec["task"] == "classification"
        if classify:
            _, y = np.unique(y, return_inverse=True)
            y = y.astype(np.int64)
        else:
            y = y.astype(np.float64).reshape(-1, 1)
        if spec["validation"] > 0:
            x, _, y, _ = train_test_split(
                x,
                y,
                test_size=spec["validation"],
                stratify=y if classify else None,
                random_state=seed,
            )
        if spec["standardize"]:
            mean, std = x.mean(axis=0), x.std(axis=0)
            x = (x - mean) / np.where(std == 0, 1.0, std)
        self.x = torch.tensor(x).to(dtype)
        bce = spec["loss"]["type"] == "BCEWithLogitsLoss"
        self.y = torch.tensor(y).to(dtype) if not classify else torch.tensor(y)
        if bce:
            self.y = self.y.to(dtype).reshape(-1, 1)
        # the session's own generator: seeded right before the model, dropout draws on from it
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            layers: list[nn.Module] = []
            shape: tuple[int, ...] = (x.shape[1],)
            for spec_layer in spec["model"]:
                made = layer(spec_layer, shape)
                layers.append(made)
                with torch.no_grad():
                    shape = tuple(made.eval()(torch.zeros((2, *shape))).shape[1:])
                made.train()
            self.model = nn.Sequential(*layers).to(dtype)
            self.state = torch.get_rng_state()
        with torch.no_grad():
            for i, spec_layer in enumerate(spec["model"]):
                init = spec_layer.get("init", "default")
                if init == "zeros":
                    for p in layers[i].parameters(recurse=False):
                        p.zero_()
                elif isinstance(init, dict):
                    for key, values in init.items():
                        getattr(layers[i], key).copy_(torch.tensor(values, dtype=torch.float64))
        loss_kwargs = {k: v for k, v in spec["loss"].items() if k != "type"}
        self.loss_fn = getattr(nn, spec["loss"]["type"])(**loss_kwargs)
        params = self.model.parameters()
        if optimizer["kind"] == "adam":
            self.optimizer: torch.optim.Optimizer = torch.optim.Adam(params, lr=lr)
        else:
            self.optimizer = torch.optim.SGD(params, lr=lr, momentum=optimizer.get("momentum", 0.0))
        self.data = self._batches(spec["batch_size"], spec["shuffle"], seed)
        self.out: torch.Tensor | None = None
        self.batch_y: torch.Tensor | None = None
        self.loss: torch.Tensor | None = None

    def _batches(
        self, size: int, shuffle: bool, seed: int
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng = np.random.default_rng(seed)
        n = len(self.y)
        while True:
            if not shuffle:
                for start in range(0, n, size):
                    yield self.x[start : start + size], self.y[start : start + size]
                continue
            order = rng.permutation(n)
            for start in range(0, n, size):
                idx = torch.from_numpy(order[start : start + size])
                yield self.x[idx], self.y[idx]

    def line(self, entry: str) -> None:
        """One line; raises where the lesson's line cannot run (as the Lab refuses it)."""
        if entry == "forward":
            x, self.batch_y = next(self.data)
            with torch.random.fork_rng():
                torch.set_rng_state(self.state)
                self.out = self.model(x)
                self.state = torch.get_rng_state()
        elif entry == "loss":
            if self.out is None:
                raise RuntimeError("no output")
            self.loss = self.loss_fn(self.out, self.batch_y)
        elif entry == "zero_grad":
            self.optimizer.zero_grad()
        elif entry == "backward":
            if self.loss is None:
                raise RuntimeError("no loss")
            self.loss.backward()
        elif entry == "step":
            self.optimizer.step()
