"""Batch orders: where a Lab's next batch comes from, and its position as part of a session's
state (captured and restored with the rest)."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch


class Batches(Protocol):
    """Where the next batch comes from; its position is part of a session's state."""

    def next(self) -> tuple[torch.Tensor, torch.Tensor]: ...
    def state(self) -> dict[str, Any]: ...
    def restore(self, state: dict[str, Any]) -> None: ...


class FullBatch:
    """Every point in every batch (the neuron's four, the parabola's one)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x, self.y

    def state(self) -> dict[str, Any]:
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        pass


class InOrder:
    """Batches of ``size`` in the rows' own order, over and over (a spec with ``shuffle``
    false); the last of a pass smaller."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, size: int) -> None:
        self.x, self.y, self.size = x, y, size
        self.start = 0

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.start >= len(self.y):
            self.start = 0
        end = self.start + self.size
        x, y = self.x[self.start : end], self.y[self.start : end]
        self.start = end
        return x, y

    def state(self) -> dict[str, Any]:
        return {"start": self.start}

    def restore(self, state: dict[str, Any]) -> None:
        self.start = state["start"]


class Epochs:
    """Batches of ``size`` in a fresh order each epoch: ``rng.permutation(n)`` drawn once per
    epoch."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, seed: int, size: int) -> None:
        self.x, self.y, self.size = x, y, size
        self.rng = np.random.default_rng(seed)
        self.order: np.ndarray | None = None
        self.start = 0

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        n = len(self.y)
        if self.order is None or self.start >= n:
            self.order, self.start = self.rng.permutation(n), 0
        idx = torch.from_numpy(self.order[self.start : self.start + self.size])
        self.start += self.size
        return self.x[idx], self.y[idx]

    def state(self) -> dict[str, Any]:
        order = None if self.order is None else self.order.copy()
        return {"rng": self.rng.bit_generator.state, "order": order, "start": self.start}

    def restore(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.order = None if state["order"] is None else state["order"].copy()
        self.start = state["start"]


class MicroBatches:
    """Each batch split into k micro-batches, handed out one per forward (the lesson's
    "accumulating on purpose").

    Alongside each micro-batch comes its share of the batch, |B_j| / n: 1/k when the
    split is even, the weight that keeps the sum exact when it is not (a batch of 22).
    """

    def __init__(self, batches: Batches, k: int) -> None:
        self.batches, self.k = batches, k
        self.pending: list[tuple[torch.Tensor, torch.Tensor, float]] = []

    def next(self) -> tuple[torch.Tensor, torch.Tensor, float]:
        if not self.pending:
            x, y = self.batches.next()
            n = len(y)
            self.pending = [
                (xj, yj, len(yj) / n)
                for xj, yj in zip(x.tensor_split(self.k), y.tensor_split(self.k), strict=True)
            ]
        return self.pending.pop(0)

    def state(self) -> dict[str, Any]:
        return {"batches": self.batches.state(), "pending": list(self.pending)}

    def restore(self, state: dict[str, Any]) -> None:
        self.batches.restore(state["batches"])
        self.pending = list(state["pending"])
