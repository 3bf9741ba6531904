"""Plain PyTorch, written as the lesson writes it: the oracle every engine test compares with."""

from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split
from torch import nn


class Plain:
    """The lesson's variables (model, loss_fn, optimizer, out, loss) and nothing else."""

    def __init__(
        self,
        scenario: str,
        lr: float,
        seed: int = 0,
        optimizer: str = "sgd",
        *,
        max_norm: float = 1.0,
        scheduler: dict[str, Any] | None = None,
        dropout: float = 0.0,
        batchnorm: bool = False,
        softmax_before_loss: bool = False,
        dtype: torch.dtype = torch.float64,
        amp: str | None = None,
        grad_scaler: bool = True,
        **kw: Any,
    ) -> None:
        """``optimizer`` "sgd" or "adam", ``kw`` its keyword arguments (momentum, betas...);
        the rest of the real loop's setup as the API takes it."""
        self.seed, self.lr, self.kw, self.max_norm = seed, lr, kw, max_norm
        self.softmax = softmax_before_loss
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
            self.x, self.y = torch.tensor(x_train, dtype=dtype), torch.tensor(y_train)
            torch.manual_seed(seed)
            self.model = self._moons(dropout, batchnorm).to(dtype)
            self.loss_fn = nn.CrossEntropyLoss()
            self.batches = self._epochs(seed)
        self.make = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
        self.optimizer = self.make(self.model.parameters(), lr=lr, **kw)
        self.scheduler: Any = None
        if scheduler is not None and scheduler["kind"] == "step":
            self.scheduler = torch.optim.lr_scheduler.StepLR(
                self.optimizer, scheduler["step_size"], scheduler["gamma"]
            )
        elif scheduler is not None:
            self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
                self.optimizer, scheduler["T_max"]
            )
        self.dropout, self.batchnorm, self.dtype = dropout, batchnorm, dtype
        self.out: torch.Tensor | None = None
        self.yb: torch.Tensor | None = None
        self.loss: torch.Tensor | None = None
        self.running_loss: Any = 0.0
        self.ckpt: dict[str, Any] | None = None
        self.norm: torch.Tensor | None = None
        # mixed precision: forward and loss under autocast; float16 with a GradScaler
        self.amp = None if amp is None else getattr(torch, amp)
        use_scaler = amp == "float16" and grad_scaler
        self.scaler: Any = torch.amp.GradScaler("cpu") if use_scaler else None

    def autocast(self) -> Any:
        if self.amp is None:
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=self.amp)

    @contextlib.contextmanager
    def scaler_kept(self) -> Iterator[None]:
        """The app's contract: a line PyTorch refuses leaves the scaler and .grad as they were."""
        saved = copy.deepcopy(self.scaler.__dict__)
        grads = [None if p.grad is None else p.grad.clone() for p in self.model.parameters()]
        try:
            yield
        except (RuntimeError, AssertionError):
            self.scaler.__dict__.update(saved)
            for p, g in zip(self.model.parameters(), grads, strict=True):
                p.grad = g
            raise

    @staticmethod
    def _moons(dropout: float, batchnorm: bool) -> nn.Sequential:
        layers: list[nn.Module] = [nn.Linear(2, 16)]
        layers += [nn.BatchNorm1d(16)] * batchnorm + [nn.ReLU()]
        layers += [nn.Dropout(dropout)] * (dropout > 0) + [nn.Linear(16, 16)]
        layers += [nn.BatchNorm1d(16)] * batchnorm + [nn.ReLU()]
        layers += [nn.Dropout(dropout)] * (dropout > 0) + [nn.Linear(16, 2)]
        return nn.Sequential(*layers)

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
            with self.autocast():
                self.out, self.yb = self.model(self.x[idx]), self.y[idx]
        elif name == "loss":
            assert self.out is not None
            with self.autocast():
                out = self.out.softmax(dim=1) if self.softmax else self.out
                self.loss = self.loss_fn(out, self.yb)
        elif name.startswith("zero_grad"):
            self.optimizer.zero_grad(set_to_none="False" not in name)
        elif name.startswith("backward"):
            assert self.loss is not None
            before = [None if p.grad is None else p.grad.clone() for p in self.model.parameters()]
            try:
                loss = self.loss if self.scaler is None else self.scaler.scale(self.loss)
                loss.backward(retain_graph="retain_graph=True" in name)
            except RuntimeError:
                for p, g in zip(self.model.parameters(), before, strict=True):
                    p.grad = g
                raise
        elif name == "step" and self.scaler is not None:
            with self.scaler_kept():
                self.scaler.step(self.optimizer)
        elif name == "step":
            self.optimizer.step()
        elif name == "scaler_update":
            with self.scaler_kept():  # AttributeError without a scaler
                self.scaler.update()
        elif name == "clip_grad_norm":
            if self.scaler is not None:
                with self.scaler_kept():
                    self.scaler.unscale_(self.optimizer)
            self.norm = torch.nn.utils.clip_grad_norm_(
                self.model.parameters(), max_norm=self.max_norm
            )
        elif name == "scheduler_step":
            self.scheduler.step()  # AttributeError without a scheduler
        elif name == "train":
            self.model.train()
        elif name == "eval":
            self.model.eval()
        elif name == "log_item":
            assert self.loss is not None
            self.running_loss += self.loss.item()
        elif name == "log_tensor":
            assert self.loss is not None
            self.running_loss += self.loss
        elif name.startswith("checkpoint"):
            # a copy, as torch.save then torch.load would give
            ckpt: dict[str, Any] = {"model": copy.deepcopy(self.model.state_dict())}
            if "model_only" not in name:
                ckpt["optimizer"] = copy.deepcopy(self.optimizer.state_dict())
                if self.scaler is not None:
                    ckpt["scaler"] = copy.deepcopy(self.scaler.state_dict())
            self.ckpt = ckpt
        elif name == "resume":
            assert self.ckpt is not None
            with torch.random.fork_rng(devices=[]):  # a fresh model: its own draws, not dropout's
                torch.manual_seed(self.seed)
                model = (
                    self._moons(self.dropout, self.batchnorm).to(self.dtype)
                    if isinstance(self.model, nn.Sequential)
                    else nn.Linear(1, 1)
                )
            optimizer = self.make(model.parameters(), lr=self.lr, **self.kw)
            model.load_state_dict(copy.deepcopy(self.ckpt["model"]))
            if "optimizer" in self.ckpt:
                optimizer.load_state_dict(copy.deepcopy(self.ckpt["optimizer"]))
            self.model, self.optimizer = model, optimizer
            if self.scaler is not None:  # a fresh scaler, and what the checkpoint holds of it
                self.scaler = torch.amp.GradScaler("cpu")
                if "scaler" in self.ckpt:
                    self.scaler.load_state_dict(self.ckpt["scaler"])
        else:
            raise ValueError(name)
