"""One student's live PyTorch training loop, one method per line of the lesson.

``forward``, ``loss``, ``zero_grad``, ``backward`` and ``step`` each do exactly what
their line does and nothing more; ``snapshot`` reads the four stores (parameters,
graph, ``.grad``, loss). No HTTP here: the web layer wraps a Lab.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

from app.engine import answer, capture, output
from app.engine.effects import done
from app.engine.entries import ENTRIES
from app.engine.errors import LineError
from app.engine.extras import clip
from app.engine.parts import HISTORY_LIMIT, Parts
from app.engine.program import Toggles, carry_cursor, program_for
from app.engine.setup import Setup
from app.engine.state import LabState
from app.engine.views import LossPointView, OutputView, SessionView
from app.spec.batches import MicroBatches
from app.torchlock import TORCH_LOCK, with_rng

__all__ = ["HISTORY_LIMIT", "Lab", "LabState", "LineError"]


class Lab(Parts):
    """The Parts a Setup builds (``parts.py``: the model, data, optimizer, program and
    counters), and one method per line of the loop over them."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.initial = self.capture()

    # -- the five lines -----------------------------------------------------------

    def forward(self) -> None:
        """``out = model(X)``: the next batch through the model; a fresh graph."""
        if isinstance(self.batches, MicroBatches):
            x, self.y, self.share = self.batches.next()
        else:
            x, self.y = self.batches.next()
        self.x = x
        with self.amp.autocast():
            self.out = self._model(x)
        self.iteration += 1
        self.autograd.start(self.out)
        self._did("forward")

    def loss(self) -> None:
        """``loss = loss_fn(out, y)``: the last node of the graph."""
        if self.out is None:
            raise LineError("loss", "loss needs an output: run forward first")
        with self.amp.autocast():
            out = self.out.softmax(dim=1) if self.setup.softmax_before_loss else self.out
            loss = self.loss_fn(out, self.y)
            k = self.setup.accumulate
            if k > 1:  # an uneven split weighs each part by its share (README)
                loss = loss / k if self.share * k == 1 else loss * self.share
        self.loss_tensor, self.loss_spent = loss, False
        self.loss_value = loss.item()
        first = next(iter(self.named.values())).detach().flatten()[0].item()
        point: LossPointView = {
            "n": self.losses,
            "iteration": self.iteration,
            "loss": self.loss_value,
            "param": first,
        }
        self.history.append(point)
        self.losses += 1
        self.autograd.start(self.loss_tensor)
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
            self.amp.backward(self.loss_tensor, retain_graph)
        except RuntimeError as error:
            # PyTorch may have added into some buffers before it failed: put them back. The
            # graph it walked so far it has freed, and says so if asked again: show it freed
            for n, p in self.named.items():
                p.grad = saved[n]
            self.autograd.backward(self.loss_tensor, retain_graph)
            raise LineError("backward", str(error), torch_error=True) from error
        if not retain_graph:
            self.loss_spent = True
        self.autograd.backward(self.loss_tensor, retain_graph)
        self._did("backward")

    def step(self) -> None:
        """``optimizer.step()``: moves each parameter whose ``.grad`` is not None. With a
        GradScaler, ``scaler.step(optimizer)``: unscales .grad, then steps unless a gradient is
        inf or NaN (a skipped step writes only the scaler's store)."""
        skipped = self.amp.step("step", self.optimizer)
        self.steps += 1
        self._did("step", writes=("scaler",) if skipped else None)

    def scaler_update(self) -> None:
        """``scaler.update()``: the next scale (halved after a skipped step)."""
        self.amp.update("scaler_update", self.optimizer)
        self._did("scaler_update")

    # -- the rest of the real loop ---------------------------------------------------

    def clip_grad_norm(self) -> None:
        """``clip_grad_norm_(model.parameters(), max_norm)``: one L2 norm over every .grad;
        above max_norm, every .grad is scaled by the same factor. With every .grad None it
        measures 0 and touches nothing."""
        self.amp.unscale("clip_grad_norm", self.optimizer)  # with a GradScaler: unscale_ first
        norm, scaled = clip(self.named.values(), self.max_norm)
        writes = ("grad", "scaler") if self.amp.scaler else ("grad",) if scaled else ()
        self._did("clip_grad_norm", writes=writes, result=norm)
        assert self.last is not None
        self.last["scaled"] = scaled

    def scheduler_step(self) -> None:
        """``scheduler.step()``: the next lr of the schedule into the optimizer."""
        self.schedule.step()
        self._did("scheduler_step")

    def train(self) -> None:
        """``model.train()``: dropout draws masks, BatchNorm uses and updates batch stats."""
        self.model.train()
        self._did("train")

    def eval(self) -> None:
        """``model.eval()``: dropout passes through, BatchNorm uses its running statistics."""
        self.model.eval()
        self._did("eval")

    def log_item(self) -> None:
        """``running_loss += loss.item()``: a Python float; no graph is kept."""
        self.running.add_item(self._logged_loss("log_item"))
        self._did("log_item")

    def log_tensor(self) -> None:
        """``running_loss += loss``: the tensor, and with it the loss's whole graph."""
        self.running.add_tensor(self._logged_loss("log_tensor"))
        self._did("log_tensor")

    def checkpoint(self, model_only: bool = False) -> None:
        """``ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}``,
        held as copies (as ``torch.save`` then ``torch.load`` would give them)."""
        self.ckpt.take(
            self.model,
            self.optimizer,
            model_only=model_only,
            iteration=self.iteration,
            steps=self.steps,
            extra=self.amp.state_dict(),
        )
        reads: tuple[str, ...] = ("params", "buffers")
        if not model_only:
            reads += ("optimizer_state",)
        if self.amp.scaler and not model_only:
            reads += ("scaler",)
        self._did("checkpoint", reads=reads)

    def resume(self) -> None:
        """A fresh model and optimizer (train mode, every .grad None, no optimizer state, the
        creation lr), then ``load_state_dict`` of what the checkpoint holds."""
        held = self.ckpt.resume(self.model, self.optimizer, self.setup.optimizer, self.setup.lr)
        self.named = dict(self.model.named_parameters())  # new tensors: see ckpt.resume
        self.autograd.names.add(self.named)  # a graph of the old ones still names its leaves
        self.amp.load_state_dict(held)  # a fresh scaler unless ckpt holds one
        self._did("resume")

    def _logged_loss(self, entry: str) -> torch.Tensor:
        if self.loss_tensor is None:
            raise LineError(entry, f"{entry} needs a loss: run loss first")
        return self.loss_tensor

    # -- the loop program ---------------------------------------------------------

    def run_line(self, entry: str) -> None:
        """Run one program entry, e.g. ``backward(retain_graph=True)``: its row of the table
        names the method and its keyword arguments."""
        row = ENTRIES[entry]
        method: Callable[..., None] = getattr(self, row.method)
        # warnings and torch's default generator are process-wide: one line at a time
        with TORCH_LOCK, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                method(**row.kwargs)
            except LineError as error:
                error.line = entry  # the page marks the program row that failed
                raise
            except (RuntimeError, ValueError) as error:
                # PyTorch refused the line (a shape, BatchNorm on a batch of one): its words
                raise LineError(entry, str(error), torch_error=True) from error
        if self.last is not None:
            self.last["line"] = entry
            self.last["warnings"] = [str(w.message) for w in caught]

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
        self.describe_program()

    def set_toggles(self, toggles: Toggles) -> None:
        self.set_program(program_for(toggles, self.setup.accumulate, self.setting.grad_scaler))

    # -- capture, restore, reset --------------------------------------------------

    def capture(self, *, history: bool = True) -> LabState:
        return capture.capture(self, history=history)

    def restore(self, saved: LabState, *, whole: bool = False) -> None:
        """Put the stores back as captured. lr and the program stay as they are now, unless
        ``whole``: then they, the cursor and the last line are the captured ones too."""
        capture.restore(self, saved, whole=whole)

    def reset(self) -> None:
        """Back to the initial parameters, iteration 0; toggles and lr kept (with a scheduler
        the schedule starts again, from the creation lr: it owns the lr)."""
        self.restore(self.initial)
        if self.schedule.scheduler is not None:
            self.lr = self.initial.lr

    # -- reading the stores -------------------------------------------------------

    def _model(self, x: torch.Tensor) -> torch.Tensor:
        """``model(x)``; dropout draws from this session's own generator state."""
        if self.rng is None or not self.model.training:
            return self.model(x)  # type: ignore[no-any-return]
        out, self.rng = with_rng(self.model, x, self.rng)
        return out

    def _did(
        self,
        line: str,
        *,
        reads: tuple[str, ...] | None = None,
        writes: tuple[str, ...] | None = None,
        result: float | None = None,
    ) -> None:
        self.last = done(line, self.setting, self.model.training, reads, writes, result)

    def output(self, size: int = 30) -> OutputView:
        """What the model computes now, for the output view; touches no store (eval mode)."""
        return output.view(self.model, self.points, self.targets, size, self.built, self.loss_fn)

    def view(self, since: int = 0) -> SessionView:
        """The stores and the loop's position as plain values (see ``answer.snapshot``)."""
        return answer.view(self, since)
