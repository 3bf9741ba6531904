"""Plain PyTorch, written as the lesson writes it: the oracle every engine test compares with."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split
from torch import nn


class Plain:
    """The lesson's variables (model, loss_fn, optimizer, out, loss) and nothing else."""

    def __init__(
        self, scenario: str, lr: float, seed: int = 0, optimizer: str = "sgd", **kw: Any
    ) -> None:
        """``optimizer`` "sgd" or "adam", ``kw`` its keyword arguments (momentum, betas...)."""
        if scenario == "neuron":
            self.x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
            self.y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
            self.model: nn.Module = nn.Linear(1, 1)
            with torch.no_grad():
                self.model.weight.zero_()
                self.model.bias.zero_()
            self.loss_fn: nn.Module = nn.MSELoss()
            self.batches = itertools.repeat(np.arange(4))
        else:
            x, labels = make_moons(n_samples=200, noise=0.2, random_state=seed)
            x_train, _, y_train, _ = train_test_split(
                x, labels, test_size=0.25, stratify=labels, random_state=seed
            )
            self.x, self.y = torch.tensor(x_train), torch.tensor(y_train)
            torch.manual_seed(seed)
            self.model = nn.Sequential(
                nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2)
            ).double()
            self.loss_fn = nn.CrossEntropyLoss()
            self.batches = self._epochs(seed)
        make = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
        self.optimizer = make(self.model.parameters(), lr=lr, **kw)
        self.out: torch.Tensor | None = None
        self.yb: torch.Tensor | None = None
        self.loss: torch.Tensor | None = None

    @staticmethod
    def _epochs(seed: int):  # type: ignore[no-untyped-def]
        rng = np.random.default_rng(seed)
        while True:
            order = rng.permutation(150)
            for k in range(0, 150, 32):
                yield order[k : k + 32]

    def line(self, name: str) -> None:
        """Run one line; a RuntimeError leaves .grad as it was (the app's contract)."""
        if name == "forward":
            idx = torch.from_numpy(np.asarray(next(self.batches)))
            self.out, self.yb = self.model(self.x[idx]), self.y[idx]
        elif name == "loss":
            self.loss = self.loss_fn(self.out, self.yb)
        elif name.startswith("zero_grad"):
            self.optimizer.zero_grad(set_to_none="False" not in name)
        elif name.startswith("backward"):
            assert self.loss is not None
            before = [None if p.grad is None else p.grad.clone() for p in self.model.parameters()]
            try:
                self.loss.backward(retain_graph="retain_graph=True" in name)
            except RuntimeError:
                for p, g in zip(self.model.parameters(), before, strict=True):
                    p.grad = g
                raise
        elif name == "step":
            self.optimizer.step()
        else:
            raise ValueError(name)
