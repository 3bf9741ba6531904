"""One student's live PyTorch training loop, one method per line of the lesson.

``forward``, ``loss``, ``zero_grad``, ``backward`` and ``step`` each do exactly what
their line does and nothing more; ``snapshot`` reads the four stores (parameters,
graph, ``.grad``, loss). No HTTP here: the web layer wraps a Lab.
"""

from __future__ import annotations

import copy
import itertools
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from . import optimizers, output, scenarios, theory
from .graph import kept, walk
from .optimizers import PLAIN_SGD, OptimizerSpec, SchedulerSpec, state_of
from .program import (
    ENTRIES,
    NO_BUGS,
    Toggles,
    carry_cursor,
    code,
    preset_of,
    program_for,
    toggles_of,
)

HISTORY_LIMIT = 1000  # loss points kept per session: bounds memory and response size

# The lesson's F2 table: which stores each line reads and writes. A stateful optimizer
# (momentum, Adam) adds a fifth store that step reads and writes.
EFFECTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "forward": (("params", "data"), ("graph",)),
    "loss": (("graph", "data"), ("graph", "loss")),
    "zero_grad": ((), ("grad",)),
    "backward": (("loss", "graph", "grad"), ("grad", "graph")),
    "step": (("grad", "params"), ("params",)),
    "clip_grad_norm": (("grad",), ("grad",)),
    "scheduler_step": (("lr",), ("lr",)),
    "train": ((), ("mode",)),
    "eval": ((), ("mode",)),
    "log_item": (("loss", "running_loss"), ("running_loss",)),
    "log_tensor": (("loss", "graph", "running_loss"), ("running_loss",)),
    "checkpoint": (("params", "buffers", "optimizer_state"), ("ckpt",)),
    "resume": (("ckpt",), ("params", "buffers", "grad", "optimizer_state", "mode", "lr")),
}
STATEFUL_STEP = (("grad", "params", "optimizer_state"), ("params", "optimizer_state"))


def spent_loss(value: float | None = None, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A loss whose graph backward has freed: a backward through it raises PyTorch's own
    "Trying to backward through the graph a second time" and touches no parameter. It holds
    the loss's value, in its dtype, for a ``running_loss`` line that reads it."""
    a = torch.tensor(1.0 if value is None else value, dtype=dtype, requires_grad=True)
    loss = a * torch.ones((), dtype=dtype, requires_grad=True)  # saves both: freed by backward
    loss.backward()  # type: ignore[no-untyped-call]
    return loss


class LineError(Exception):
    """A line that cannot run in the current state (the HTTP layer answers 409).

    ``torch_error`` is True when the message is PyTorch's own, raised by PyTorch.
    """

    def __init__(self, line: str, message: str, torch_error: bool = False) -> None:
        super().__init__(message)
        self.line, self.message, self.torch_error = line, message, torch_error


@dataclass
class LabState:
    """Everything needed to put a Lab back where it was, except the autograd graph.

    A graph cannot be copied, so a restored Lab starts with no graph (as after reset). Only a
    loss whose graph backward has wholly freed is brought back, as a stand-in that fails the
    way it would (``loss_spent``): that is all a spent graph can still do.
    """

    params: dict[str, torch.Tensor]
    grads: dict[str, torch.Tensor | None]
    optimizer: dict[str, Any]
    batches: dict[str, Any]
    cursor: int = 0
    iteration: int = 0
    steps: int = 0
    losses: int = 0
    loss: float | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    lr: float = 0.0
    program: list[str] = field(default_factory=list)
    last: dict[str, Any] | None = None
    loss_spent: bool = False
    loss_dtype: str = "float64"
    training: bool = True
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)
    scheduler: dict[str, Any] | None = None  # its state_dict, and whether step ran (warning)
    running_loss: float | torch.Tensor = 0.0
    kept: int = 0  # graphs a tensor running_loss held
    ckpt: dict[str, Any] | None = None
    ckpt_at: dict[str, int] | None = None
    rng: torch.Tensor | None = None  # the session's own torch generator state (dropout)
    # False when running_loss is a tensor holding graphs: a restore cannot bring those back
    exact: bool = True


class Lab:
    """A live model, loss function, optimizer and data, and the loop program over them.

    ``accumulate`` = k makes forward hand out the k micro-batches of each batch in turn
    and loss divide by k (the lesson's "accumulating on purpose"). ``options`` are the
    scenario's own (the parabola's ``curvature`` and ``theta_star``).
    """

    def __init__(
        self,
        scenario: str,
        lr: float,
        seed: int,
        toggles: Toggles = NO_BUGS,
        *,
        optimizer: OptimizerSpec = PLAIN_SGD,
        accumulate: int = 1,
        options: dict[str, float] | None = None,
        max_norm: float = 1.0,
        scheduler: SchedulerSpec | None = None,
        dropout: float = 0.0,
        batchnorm: bool = False,
        softmax_before_loss: bool = False,
        dtype: str = "float64",
    ) -> None:
        self.options = dict(options or {})
        model_options: dict[str, Any] = {}
        if (dropout, batchnorm, softmax_before_loss, dtype) != (0.0, False, False, "float64"):
            if scenario != "moons":
                raise ValueError("dropout, batchnorm, softmax_before_loss, dtype: moons only")
            model_options = {"dropout": dropout, "batchnorm": batchnorm, "dtype": dtype}
        if max_norm <= 0:
            raise ValueError("max_norm must be above 0")
        self.max_norm, self.dropout, self.batchnorm = max_norm, dropout, batchnorm
        self.softmax_before_loss, self.dtype = softmax_before_loss, dtype
        built = scenarios.build(scenario, seed, **self.options, **model_options)
        self.scenario, self.seed, self.accumulate = scenario, seed, accumulate
        self.model, self.loss_fn = built.model, built.loss_fn
        self.batches: scenarios.Batches | scenarios.MicroBatches = (
            built.batches if accumulate == 1 else scenarios.MicroBatches(built.batches, accumulate)
        )
        self.points, self.targets = built.points, built.targets
        self.spec = optimizer
        self.base_lr = lr  # what a fresh optimizer (resume) is built with
        self.optimizer = optimizer.make(self.model.parameters(), lr)
        self.scheduler_spec = scheduler
        self.scheduler = None if scheduler is None else scheduler.make(self.optimizer)
        # dropout draws from torch's default generator: each session keeps its own state
        self.rng = built.rng if dropout > 0 else None
        self.named = dict(self.model.named_parameters())
        # the model's buffers are written in place (train, resume, restore): found once here, not
        # by a walk over its modules on every answer
        self.buffers = dict(self.model.named_buffers())
        self.buffer_names = list(self.buffers)
        self.running_loss: float | torch.Tensor = 0.0
        self.kept = 0  # loss graphs a tensor running_loss holds
        self.ckpt: dict[str, Any] | None = None
        self.ckpt_at: dict[str, int] | None = None
        self._names = {id(p): n for n, p in self.named.items()}
        self.program = program_for(toggles, accumulate)
        self._describe_program()
        self.cursor = 0
        self.iteration = 0  # forward calls so far
        self.steps = 0  # step calls so far
        self.losses = 0  # loss lines so far: the next history point's number n
        self.out: torch.Tensor | None = None
        self.y: torch.Tensor | None = None  # the targets of the batch forward drew
        self.share = 1.0  # the micro-batch's share of its batch, when accumulating
        self.loss_tensor: torch.Tensor | None = None
        self.loss_value: float | None = None
        self.loss_spent = False  # a backward without retain_graph has freed the loss's graph
        # {n, iteration, loss, param} per loss line, made once: every answer sends them
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY_LIMIT)
        self.last: dict[str, Any] | None = None
        self._root: torch.Tensor | None = None  # the newest graph's output
        self._walked: tuple[torch.Tensor | None, list[Any], list[Any]] = (None, [], [])
        self._freed = False
        self._initial = self.capture()

    # -- the five lines -----------------------------------------------------------

    def forward(self) -> None:
        """``out = model(X)``: the next batch through the model; a fresh graph."""
        if isinstance(self.batches, scenarios.MicroBatches):
            x, self.y, self.share = self.batches.next()
        else:
            x, self.y = self.batches.next()
        self.out = self._model(x)
        self.iteration += 1
        self._new_graph(self.out)
        self._did("forward")

    def loss(self) -> None:
        """``loss = loss_fn(out, y)``: the last node of the graph."""
        if self.out is None:
            raise LineError("loss", "loss needs an output: run forward first")
        out = self.out.softmax(dim=1) if self.softmax_before_loss else self.out
        loss = self.loss_fn(out, self.y)
        if self.accumulate > 1:  # an uneven split weighs each part by its share (see README)
            k = self.accumulate
            loss = loss / k if self.share * k == 1 else loss * self.share
        self.loss_tensor, self.loss_spent = loss, False
        self.loss_value = loss.item()
        first = next(iter(self.named.values())).detach().flatten()[0].item()
        point = {
            "n": self.losses,
            "iteration": self.iteration,
            "loss": self.loss_value,
            "param": first,
        }
        self.history.append(point)
        self.losses += 1
        self._new_graph(self.loss_tensor)
        self._did("loss")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """``optimizer.zero_grad()``: buffers to None (or to zeros)."""
        self.optimizer.zero_grad(set_to_none=set_to_none)
        self._did("zero_grad")

    def backward(self, retain_graph: bool = False) -> None:
        """``loss.backward()``: adds each gradient into ``.grad``, then frees the graph."""
        if self.loss_tensor is None:
            raise LineError("backward", "backward needs a loss: run loss first")
        saved = {n: None if p.grad is None else p.grad.clone() for n, p in self.named.items()}
        try:
            self.loss_tensor.backward(retain_graph=retain_graph)  # type: ignore[no-untyped-call]
        except RuntimeError as error:
            # PyTorch may have added into some buffers before it failed: put them back. The
            # graph it walked so far it has freed, and says so if asked again: show it freed
            for n, p in self.named.items():
                p.grad = saved[n]
            if not retain_graph and self.loss_tensor is self._root:
                self._freed = True
            raise LineError("backward", str(error), torch_error=True) from error
        if not retain_graph:
            self.loss_spent = True
            if self.loss_tensor is self._root:
                self._freed = True
        self._did("backward")

    def step(self) -> None:
        """``optimizer.step()``: moves each parameter whose ``.grad`` is not None."""
        self.optimizer.step()
        self.steps += 1
        self._did("step")

    # -- the rest of the real loop ---------------------------------------------------

    def clip_grad_norm(self) -> None:
        """``clip_grad_norm_(model.parameters(), max_norm)``: one L2 norm over every .grad;
        above max_norm, every .grad is scaled by the same factor. With every .grad None it
        measures 0 and touches nothing."""
        params = list(self.named.values())
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm=self.max_norm)
        any_grad = any(p.grad is not None for p in params)
        # the factor clip_grad_norm_ multiplies by, computed as it does (in the norm's dtype)
        scaled = any_grad and bool(self.max_norm / (norm + 1e-6) < 1)
        self._did("clip_grad_norm", writes=("grad",) if scaled else (), result=norm.item())
        assert self.last is not None
        self.last["scaled"] = scaled

    def scheduler_step(self) -> None:
        """``scheduler.step()``: the next lr of the schedule into the optimizer."""
        if self.scheduler is None:
            raise LineError(
                "scheduler_step",
                "scheduler.step() needs a scheduler: create the session with one "
                '(e.g. "scheduler": {"kind": "step", "step_size": 1, "gamma": 0.5})',
            )
        self.scheduler.step()
        self._did("scheduler_step")

    def train(self) -> None:
        """``model.train()``: dropout draws masks, BatchNorm uses and updates batch stats."""
        self.model.train()
        self._did("train")

    def eval(self) -> None:
        """``model.eval()``: dropout passes through, BatchNorm uses its running statistics."""
        self.model.eval()
        self._did("eval")

    def _logged_loss(self, entry: str) -> torch.Tensor:
        if self.loss_tensor is None:
            raise LineError(entry, f"{entry} needs a loss: run loss first")
        return self.loss_tensor

    def log_item(self) -> None:
        """``running_loss += loss.item()``: a Python float; no graph is kept."""
        running = self.running_loss
        running += self._logged_loss("log_item").item()
        self.running_loss = running
        self._did("log_item")

    def log_tensor(self) -> None:
        """``running_loss += loss``: the tensor, and with it the loss's whole graph."""
        loss = self._logged_loss("log_tensor")
        running = self.running_loss
        running += loss
        self.running_loss = running
        self.kept += loss.requires_grad
        self._did("log_tensor")

    def checkpoint(self, model_only: bool = False) -> None:
        """``ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}``.

        Held as copies, as ``torch.save`` then ``torch.load`` would give them: a bare
        ``state_dict()`` shares the live tensors, which the next step changes."""
        ckpt: dict[str, Any] = {
            "model": {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        }
        if not model_only:
            ckpt["optimizer"] = copy.deepcopy(self.optimizer.state_dict())
        self.ckpt = ckpt
        self.ckpt_at = {"iteration": self.iteration, "steps": self.steps}
        reads = ("params", "buffers") if model_only else ("params", "buffers", "optimizer_state")
        self._did("checkpoint", reads=reads)

    def resume(self) -> None:
        """A fresh model and optimizer (train mode, every .grad None, no optimizer state, the
        creation lr), then ``load_state_dict`` of what the checkpoint holds."""
        if self.ckpt is None:
            raise LineError("resume", "resume needs a checkpoint: run checkpoint first")
        # the Lab's own objects are made fresh in place: the same numbers as new ones
        self.model.load_state_dict(self.ckpt["model"])
        self.model.train()
        for p in self.named.values():
            p.grad = None
        fresh = self.spec.make(self.model.parameters(), self.base_lr)
        self.optimizer.load_state_dict(fresh.state_dict())
        if "optimizer" in self.ckpt:  # a copy: Adam's step writes its state in place
            self.optimizer.load_state_dict(copy.deepcopy(self.ckpt["optimizer"]))
        self._did("resume")

    # -- the loop program ---------------------------------------------------------

    def run_line(self, entry: str) -> None:
        """Run one program entry, e.g. ``backward(retain_graph=True)``."""
        line, kwargs = ENTRIES[entry]
        method: Callable[..., None] = getattr(self, line)
        # warnings and torch's default generator are process-wide: one line at a time
        with scenarios.TORCH_LOCK, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                method(**kwargs)
            except LineError as error:
                error.line = entry  # the page marks the program row that failed
                raise
        if self.last is not None:
            self.last["line"] = entry
            self.last["warnings"] = [str(w.message) for w in caught]

    @property
    def next_line(self) -> str:
        return self.program[self.cursor]

    def next(self) -> None:
        """Run the line at the cursor and move the cursor on, wrapping at the end."""
        self.run_line(self.next_line)
        self.cursor = (self.cursor + 1) % len(self.program)

    def run(self, iterations: int) -> None:
        """Run lines until the cursor has wrapped ``iterations`` times.

        A failing line stops the run: the lines before it stay done.
        """
        for _ in range(iterations):
            self.next()
            while self.cursor != 0:
                self.next()

    def set_program(self, program: list[str]) -> None:
        """A new loop program; the lines already run in this iteration stay run."""
        self.cursor = carry_cursor(self.program, self.cursor, program)
        self.program = list(program)
        self._describe_program()

    def set_toggles(self, toggles: Toggles) -> None:
        self.set_program(program_for(toggles, self.accumulate))

    @property
    def toggles(self) -> Toggles:
        return toggles_of(self.program)

    def _describe_program(self) -> None:
        """What every answer says about the program; it changes only with the program."""
        toggles = self.toggles
        self._described = {
            "toggles": {"skip_zero_grad": toggles.skip_zero_grad, "step_first": toggles.step_first},
            "program": list(self.program),
            "code": [
                code(e, self.accumulate, max_norm=self.max_norm, softmax=self.softmax_before_loss)
                for e in self.program
            ],
            "preset": preset_of(self.program, self.softmax_before_loss),
        }

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    @lr.setter
    def lr(self, value: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = value

    # -- capture, restore, reset --------------------------------------------------

    def capture(self) -> LabState:
        return LabState(
            params={n: p.detach().clone() for n, p in self.named.items()},
            grads={n: None if p.grad is None else p.grad.clone() for n, p in self.named.items()},
            optimizer=optimizers.capture(self.optimizer, self.named),
            batches=self.batches.state(),
            cursor=self.cursor,
            iteration=self.iteration,
            steps=self.steps,
            losses=self.losses,
            loss=self.loss_value,
            history=list(self.history),
            lr=self.lr,
            program=list(self.program),
            last=None if self.last is None else dict(self.last),
            loss_spent=self.loss_tensor is not None and self.loss_spent,
            loss_dtype=str(self._loss_dtype()).removeprefix("torch."),
            training=self.model.training,
            buffers={n: b.clone() for n, b in self.buffers.items()},
            scheduler=None
            if self.scheduler is None
            else {
                "state": copy.deepcopy(self.scheduler.state_dict()),
                "opt_called": bool(getattr(self.optimizer, "_opt_called", False)),
            },
            running_loss=self.running_loss.detach().clone()
            if isinstance(self.running_loss, torch.Tensor)
            else self.running_loss,
            kept=self.kept,
            ckpt=self.ckpt,  # never changed in place: resume loads copies of it
            ckpt_at=None if self.ckpt_at is None else dict(self.ckpt_at),
            rng=None if self.rng is None else self.rng.clone(),
            exact=not isinstance(self.running_loss, torch.Tensor),
        )

    def restore(self, state: LabState, *, whole: bool = False) -> None:
        """Put the stores back as captured. lr and the program stay as they are now, unless
        ``whole``: then they, the cursor and the last line are the captured ones too."""
        lr = self.lr
        with torch.no_grad():
            for n, p in self.named.items():
                p.copy_(state.params[n])
                grad = state.grads[n]
                p.grad = None if grad is None else grad.clone()
        optimizers.restore(self.optimizer, self.named, state.optimizer)
        with torch.no_grad():
            for n, b in state.buffers.items():
                self.buffers[n].copy_(b)
        self.model.train(state.training)
        if self.scheduler is not None and state.scheduler is not None:
            self.scheduler.load_state_dict(copy.deepcopy(state.scheduler["state"]))
            self.optimizer._opt_called = state.scheduler["opt_called"]  # type: ignore[attr-defined]
        running = state.running_loss
        self.running_loss = running.clone() if isinstance(running, torch.Tensor) else running
        self.kept = state.kept
        self.ckpt = state.ckpt
        self.ckpt_at = None if state.ckpt_at is None else dict(state.ckpt_at)
        self.rng = None if state.rng is None else state.rng.clone()
        self.batches.restore(state.batches)
        if whole:
            self.program = list(state.program)
            self._describe_program()
            self.cursor, self.last = state.cursor, None if state.last is None else dict(state.last)
        else:
            self.lr = lr
            self.cursor = min(state.cursor, len(self.program) - 1)
            self.last = None
        self.iteration, self.steps, self.loss_value = state.iteration, state.steps, state.loss
        self.losses = state.losses
        self.history = deque(state.history, maxlen=HISTORY_LIMIT)
        self.out = self.y = self._root = None
        dtype = scenarios.DTYPES.get(state.loss_dtype, torch.float32)
        self.loss_tensor = spent_loss(state.loss, dtype) if state.loss_spent else None
        self.loss_spent = state.loss_spent
        self._freed = False

    def reset(self) -> None:
        """Back to the initial parameters, iteration 0; toggles and lr kept (with a scheduler
        the schedule starts again, from the creation lr: it owns the lr)."""
        self.restore(self._initial)
        if self.scheduler is not None:
            self.lr = self._initial.lr

    # -- reading the stores -------------------------------------------------------

    def _loss_dtype(self) -> torch.dtype:
        return next(iter(self.named.values())).dtype

    def _model(self, x: torch.Tensor) -> torch.Tensor:
        """``model(x)``; dropout draws from this session's own generator state, swapped into
        torch's default generator (process-wide) for the forward and back out after it."""
        if self.rng is None or not self.model.training:
            return self.model(x)  # type: ignore[no-any-return]
        with scenarios.TORCH_LOCK:
            saved = torch.get_rng_state()
            torch.set_rng_state(self.rng)
            try:
                return self.model(x)  # type: ignore[no-any-return]
            finally:
                self.rng = torch.get_rng_state()
                torch.set_rng_state(saved)

    def _new_graph(self, root: torch.Tensor) -> None:
        self._root, self._freed = root, False

    def _did(
        self,
        line: str,
        *,
        reads: tuple[str, ...] | None = None,
        writes: tuple[str, ...] | None = None,
        result: float | None = None,
    ) -> None:
        base = STATEFUL_STEP if line == "step" and self.spec.stateful else EFFECTS[line]
        r = list(base[0] if reads is None else reads)
        w = list(base[1] if writes is None else writes)
        if line == "forward" and (self.rng is not None or self.buffer_names):
            r.append("mode")  # dropout and BatchNorm read the flag
            if self.buffer_names:
                (w if self.model.training else r).append("buffers")
        if line == "step" and self.scheduler is not None:
            r.append("lr")
        if line == "resume" and not self.buffer_names:
            w.remove("buffers")
        if line == "checkpoint" and not self.buffer_names:
            r.remove("buffers")
        self.last = {
            "line": line,
            "reads": r,
            "writes": w,
            "warnings": [],
            "result": result,
            "scaled": None,
        }

    def graph(self) -> dict[str, Any]:
        # a graph's shape never changes once built: walk it once, not on every answer
        if self._walked[0] is not self._root:
            self._walked = (self._root, *walk(self._root, self._names))
        _, nodes, edges = self._walked
        status = "empty" if not nodes else "freed" if self._freed else "built"
        return {"status": status, "nodes": nodes, "edges": edges}

    def output(self, size: int = 30) -> dict[str, Any]:
        """What the model computes now, for the output view; touches no store: in eval mode
        for the call, so no dropout mask is drawn and BatchNorm's statistics stay put."""
        training = self.model.training
        self.model.eval()
        try:
            return output.view(self.model, self.points, self.targets, size)
        finally:
            self.model.train(training)

    def history_since(self, since: int) -> list[dict[str, Any]]:
        """The kept loss points numbered ``since`` or later (all kept ones for 0)."""
        if not self.history:
            return []
        wanted = len(self.history) - max(0, since - self.history[0]["n"])
        if wanted <= 0:
            return []
        # from the right: the usual answer wants one new point, not a walk over 1000
        return list(itertools.islice(reversed(self.history), wanted))[::-1]

    def snapshot(self, since: int = 0) -> dict[str, Any]:
        """The stores and the loop's position as plain values: the exact floats PyTorch holds
        (NaN and infinities too; the web layer spells those as JSON strings).

        ``since`` trims the history to the points a client does not have yet: a page that
        clicks once a second would otherwise fetch the same 1000 points every time.
        """
        return {
            "scenario": self.scenario,
            "lr": self.lr,
            "seed": self.seed,
            **self._described,
            "accumulate": self.accumulate,
            "optimizer": self.spec.describe(),
            "cursor": self.cursor,
            "next_line": self.next_line,
            "iteration": self.iteration,
            "steps": self.steps,
            "params": [
                {
                    "name": n,
                    "shape": list(p.shape),
                    "dtype": str(p.dtype).removeprefix("torch."),
                    "value": p.detach().tolist(),
                    "grad": None if p.grad is None else p.grad.tolist(),
                }
                for n, p in self.named.items()
            ],
            "optimizer_state": state_of(self.optimizer, self.named),
            "max_norm": self.max_norm,
            "scheduler": None if self.scheduler_spec is None else self.scheduler_spec.describe(),
            "model_options": {
                "dropout": self.dropout,
                "batchnorm": self.batchnorm,
                "softmax_before_loss": self.softmax_before_loss,
                "dtype": str(self._loss_dtype()).removeprefix("torch."),
            },
            "mode": "train" if self.model.training else "eval",
            "buffers": [
                {
                    "name": n,
                    "shape": list(b.shape),
                    "dtype": str(b.dtype).removeprefix("torch."),
                    "value": b.tolist(),
                }
                for n, b in self.buffers.items()
            ],
            "running_loss": self._running(),
            "ckpt": self._ckpt(),
            "loss": self.loss_value,
            "graph": self.graph(),
            "last": self.last,
            "losses": self.losses,
            "history": self.history_since(since),
            "theory": self.theory(),
        }

    def _running(self) -> dict[str, Any]:
        """running_loss: its value, and for a tensor the graphs it keeps alive."""
        running = self.running_loss
        if not isinstance(running, torch.Tensor):
            return {"value": running, "tensor": False, "graphs": 0, "nodes": 0, "saved_bytes": 0}
        nodes, saved = kept(running)
        value = running.item()
        return {
            "value": value,
            "tensor": True,
            "graphs": self.kept,
            "nodes": nodes,
            "saved_bytes": saved,
        }

    def _ckpt(self) -> dict[str, Any] | None:
        if self.ckpt is None or self.ckpt_at is None:
            return None
        return {"keys": list(self.ckpt), **self.ckpt_at}

    def theory(self) -> dict[str, Any] | None:
        """The parabola's predicted behaviour for the current learning rate."""
        if self.scenario != "parabola":
            return None
        h = self.options.get("curvature", scenarios.PARABOLA_CURVATURE)
        target = self.options.get("theta_star", scenarios.PARABOLA_TARGET)
        start = self._initial.params["theta"].item()
        return theory.parabola(self.lr, h, start, target)
