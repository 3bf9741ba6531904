# Source: d2l-ai/d2l-en, d2l/torch.py (the d2l library) — rebuilt small in our own words
"""A pocket ``d2l`` (``import d2l_small as d2l``), on ``sys.path`` as if site-packages: the
training loops of ``Trainer.fit`` and ``train_ch11`` live here and call back into the notebook
(``training_step``, an optimizer function, a method a cell attached by ``add_to_class``).
No plots (``Module.plot`` notes numbers in ``board``; the trainer prints a line an epoch), no
GPUs, no downloads: the data classes make small seeded stand-ins."""

from __future__ import annotations

import collections
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils import data


def add_to_class(cls: type) -> Callable[[Callable[..., Any]], None]:
    def attach(method: Callable[..., Any]) -> None:
        setattr(cls, method.__name__, method)

    return attach


class HyperParameters:
    def save_hyperparameters(self, ignore: Iterable[str] = ()) -> None:
        """Copies the calling ``__init__``'s arguments onto ``self``."""
        here = inspect.currentframe()
        assert here is not None and here.f_back is not None
        skipped = {"self", *ignore}
        arguments = here.f_back.f_locals
        self.hparams = {k: v for k, v in arguments.items() if k not in skipped and k[0] != "_"}
        for key, value in self.hparams.items():
            setattr(self, key, value)


class SGD:
    def __init__(self, params: Iterable[Any], lr: float) -> None:
        self.params, self.lr = list(params), lr

    def step(self) -> None:
        with torch.no_grad():
            for param in self.params:
                param -= self.lr * param.grad

    def zero_grad(self) -> None:
        for param in self.params:
            if param.grad is not None:
                param.grad.zero_()


class Module(nn.Module, HyperParameters):
    """A model that knows its loss, a training or validation step on a batch, its optimizer:
    the SGD above (d2l's base ``Module`` hands out ``torch.optim.SGD``; its scratch models,
    this SGD)."""

    lr: float
    net: nn.Module
    trainer: Trainer

    def __init__(self) -> None:
        super().__init__()
        self.board: dict[str, list[float]] = collections.defaultdict(list)

    def loss(self, y_hat: Any, y: Any) -> Any:
        raise NotImplementedError

    def forward(self, X: Any) -> Any:
        return self.net(X)

    def plot(self, key: str, value: Any, train: bool) -> None:
        self.board[("train_" if train else "val_") + key].append(value.item())

    def training_step(self, batch: Any) -> Any:
        loss = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("loss", loss, train=True)
        return loss

    def validation_step(self, batch: Any) -> None:
        self.plot("loss", self.loss(self(*batch[:-1]), batch[-1]), train=False)

    def configure_optimizers(self) -> Any:
        return SGD(self.parameters(), self.lr)


class Classifier(Module):
    """Class scores: cross-entropy loss, and accuracy when validating."""

    def validation_step(self, batch: Any) -> None:
        scores = self(*batch[:-1])
        self.plot("loss", self.loss(scores, batch[-1]), train=False)
        self.plot("acc", self.accuracy(scores, batch[-1]), train=False)

    def accuracy(self, y_hat: Any, y: Any, averaged: bool = True) -> Any:
        guesses = y_hat.reshape((-1, y_hat.shape[-1])).argmax(dim=1).type(y.dtype)
        right = (guesses == y.reshape(-1)).type(torch.float32)
        return right.mean() if averaged else right

    def loss(self, y_hat: Any, y: Any, averaged: bool = True) -> Any:
        scores, labels = y_hat.reshape((-1, y_hat.shape[-1])), y.reshape((-1,))
        return F.cross_entropy(scores, labels, reduction="mean" if averaged else "none")


class DataModule(HyperParameters):
    """Its ``tensors``' first ``num_train`` rows train, the others validate."""

    batch_size: int
    num_train: int
    num_workers: int = 0
    tensors: tuple[Any, ...]

    def get_dataloader(self, train: bool) -> Any:
        rows = slice(0, self.num_train) if train else slice(self.num_train, None)
        dataset = data.TensorDataset(*(t[rows] for t in self.tensors))
        return data.DataLoader(dataset, self.batch_size, train, num_workers=self.num_workers)


class FashionMNIST(DataModule):
    """For Fashion-MNIST: 1x28x28 images, ten seeded patterns under noise."""

    def __init__(self, batch_size: int, num_train: int = 512, num_workers: int = 0) -> None:
        self.save_hyperparameters()
        seeded = torch.Generator().manual_seed(2024)
        patterns = torch.randn(10, 28 * 28, generator=seeded)
        self.y = torch.randint(0, 10, (num_train + num_train // 4,), generator=seeded)
        noise = 2.0 * torch.randn(len(self.y), 28 * 28, generator=seeded)
        self.X = (patterns[self.y] + noise).reshape(-1, 1, 28, 28)
        self.tensors = (self.X, self.y)


class Vocab(dict[str, int]):
    """Token to index (0, ``<unk>``, for the unseen); ``idx_to_token`` the other way."""

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        self.idx_to_token = sorted({"<unk>", *tokens})
        super().__init__((token, i) for i, token in enumerate(self.idx_to_token))

    def __missing__(self, token: str) -> int:
        return 0


class TimeMachine(DataModule):
    """For H. G. Wells's book: characters of seeded words, in windows of ``num_steps``."""

    WORDS = ("the", "time", "traveller", "machine", "it", "has", "was", "we", "said", "of", "a")

    def __init__(
        self, batch_size: int, num_steps: int, num_train: int, num_workers: int = 0
    ) -> None:
        self.save_hyperparameters()
        rows = num_train + num_train // 4
        picks = torch.randint(0, 11, (rows,), generator=torch.Generator().manual_seed(1895))
        text = " ".join(self.WORDS[i] for i in picks.tolist())
        self.vocab = Vocab(text)
        windows = torch.tensor([self.vocab[ch] for ch in text]).unfold(0, num_steps + 1, 1)[:rows]
        self.X, self.Y = windows[:, :-1], windows[:, 1:]
        self.tensors = (self.X, self.Y)


class Trainer(HyperParameters):
    """d2l's order: ``training_step``, ``zero_grad``, under ``no_grad`` backward, clip, step."""

    max_epochs: int
    gradient_clip_val: float

    def __init__(self, max_epochs: int, num_gpus: int = 0, gradient_clip_val: float = 0) -> None:
        self.save_hyperparameters()
        assert num_gpus == 0, "this pocket d2l runs on the CPU"

    def fit(self, model: Module, data: DataModule) -> None:
        self.train_dataloader = data.get_dataloader(train=True)
        self.val_dataloader = data.get_dataloader(train=False)
        model.trainer, self.model = self, model
        self.optim = model.configure_optimizers()
        self.train_batch_idx = self.val_batch_idx = 0
        for epoch in range(self.max_epochs):
            self.epoch = epoch
            self.fit_epoch()

    def fit_epoch(self) -> None:
        before = {key: len(values) for key, values in self.model.board.items()}
        self.model.train()
        for batch in self.train_dataloader:
            loss = self.model.training_step(batch)
            self.optim.zero_grad()
            with torch.no_grad():
                loss.backward()
                if self.gradient_clip_val > 0:
                    self.clip_gradients(self.gradient_clip_val, self.model)
                self.optim.step()
            self.train_batch_idx += 1
        self.model.eval()
        for batch in self.val_dataloader:
            with torch.no_grad():
                self.model.validation_step(batch)
            self.val_batch_idx += 1
        news = {key: values[before.get(key, 0) :] for key, values in self.model.board.items()}
        means = ", ".join(f"{key} {sum(v) / len(v):.4f}" for key, v in news.items() if v)
        print(f"epoch {self.epoch + 1}: {means}")

    def clip_gradients(self, grad_clip_val: float, model: Any) -> None:
        grad_clipping(model, grad_clip_val)


def synthetic_data(w: Any, b: Any, num_examples: int) -> tuple[Any, Any]:
    X = torch.normal(0, 1, (num_examples, len(w)))
    y = X @ w + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def linreg(X: Any, w: Any, b: Any) -> Any:
    return X @ w + b


def squared_loss(y_hat: Any, y: Any) -> Any:
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def load_array(arrays: Any, batch_size: int, is_train: bool = True, num_workers: int = 0) -> Any:
    dataset = data.TensorDataset(*arrays)
    return data.DataLoader(dataset, batch_size, shuffle=is_train, num_workers=num_workers)


def grad_clipping(net: Any, theta: float) -> None:
    """Scales the gradients of ``net`` (a module, or anything with ``params``) to norm theta."""
    params = net.parameters() if isinstance(net, nn.Module) else net.params
    grads: list[Any] = [p.grad for p in params if p.requires_grad]
    norm = torch.stack([(g**2).sum() for g in grads]).sum().sqrt()
    if norm > theta:
        for g in grads:
            g.mul_(theta / norm)


def get_data_ch11(batch_size: int = 10, n: int = 500, num_workers: int = 0) -> tuple[Any, int]:
    """For the airfoil set: five standardized features, a noisy linear target; ``n`` rows."""
    X, y = synthetic_data(torch.tensor([1.5, -2.0, 0.5, 0.0, 1.0]), 0.3, n)
    y = y + 0.5 * torch.randn(y.shape)
    X, y = (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()
    return load_array((X, y[:, 0]), batch_size, num_workers=num_workers), 5


def evaluate_loss(net: Callable[[Any], Any], data_iter: Any, loss: Callable[..., Any]) -> float:
    """The mean loss, under ``no_grad`` (d2l's builds a graph and drops it)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for X, y in data_iter:
            values = loss(net(X), y)
            total, count = total + float(values.sum()), count + values.numel()
    return total / count


def train_ch11(
    trainer_fn: Callable[[list[Any], Any, dict[str, Any]], None],
    states: Any,
    hyperparams: dict[str, Any],
    data_iter: Any,
    feature_dim: int,
    num_epochs: int = 2,
) -> list[float]:
    """Linear regression stepped by ``trainer_fn``, a hand-written optimizer; evaluated often."""
    w = torch.normal(mean=0.0, std=0.01, size=(feature_dim, 1), requires_grad=True)
    b = torch.zeros((1,), requires_grad=True)
    net, loss = lambda X: linreg(X, w, b), squared_loss
    n, losses = 0, []
    for _ in range(num_epochs):
        for X, y in data_iter:
            l = loss(net(X), y).mean()  # noqa: E741 (d2l's name)
            l.backward()
            trainer_fn([w, b], states, hyperparams)
            n += X.shape[0]
            if n % 200 == 0:
                losses.append(evaluate_loss(net, data_iter, loss))
    print(f"loss: {losses[-1]:.4f} after {n} examples ({len(losses)} evaluations)")
    return losses
