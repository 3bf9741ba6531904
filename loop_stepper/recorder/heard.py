"""What the probe tells the recorder (``probe.py``): a backward reads the loss, the graph and
``.grad`` and writes the last two (the first finds the training loop, ``passes.py``); a step
reads ``.grad``, the parameters and the optimizer's state and writes them; a ``zero_grad``, a
clip, a load, each its store. A change made by a library (not the user's own statement) is a
moment of its own at the library's statement (``library.py``), and a library's loop's statement
that changed a store too."""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import Any

import torch

from loop_stepper.recorder import library
from loop_stepper.recorder.frame import Frame
from loop_stepper.recorder.marks import is_loss
from loop_stepper.recorder.moments import Moments
from loop_stepper.recorder.observer import Observer
from loop_stepper.recorder.passes import Passes
from loop_stepper.recorder.source import Statement
from loop_stepper.recorder.watched import Watched


class Heard(Observer):
    """The recorder as the probe's observer; ``Recorder`` is the rest."""

    moments: Moments
    watched: Watched
    passes: Passes
    stepped: bool  # an optimizer stepped since the last moment

    def frames_for(self, frame: types.FrameType) -> Frame | None:
        raise NotImplementedError

    def capped(self) -> None:
        raise NotImplementedError

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        self.passes.backward(sys._getframe(2))
        self.moments.reads |= {"loss", "graph", "grad"}
        self.moments.writes |= {"grad", "graph"}
        self.watched.reached(roots)
        self._names_of_loss(roots)

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        root = roots[0] if roots else None
        if root is not None and root.grad_fn is not None:
            self.watched.autograd.start(root)
            self.watched.autograd.backward(root, retain_graph)
            if not retain_graph:
                self.watched.spent[id(root.grad_fn)] = root.grad_fn
        if root is not None and is_loss(root):
            self.watched.loss = root
        self._library_change()

    def failed_backward(self, roots: Sequence[torch.Tensor], error: BaseException) -> None:
        root = roots[0] if roots else None
        if root is not None and root.grad_fn is not None:
            self.watched.autograd.start(root)
            self.watched.autograd.backward(root, False)  # a graph PyTorch refused is freed

    def before_step(self, optimizer: torch.optim.Optimizer) -> None:
        self.watched.optimizer(optimizer)
        self.stepped = True
        self.moments.reads |= {"grad", "params"}
        self.moments.writes.add("params")
        if optimizer.state:
            self.moments.reads.add("optimizer_state")

    def after_step(self, optimizer: torch.optim.Optimizer) -> None:
        if optimizer.state:  # a stateful optimizer (momentum, Adam): the fifth store
            self.moments.reads.add("optimizer_state")
            self.moments.writes.add("optimizer_state")
        self._library_change()

    def zero_grad(self, owner: Any, set_to_none: bool) -> None:
        if isinstance(owner, torch.optim.Optimizer):
            self.watched.optimizer(owner)
        self.moments.writes.add("grad")
        self._library_change()

    def state_loaded(self, owner: Any) -> None:
        if isinstance(owner, torch.optim.Optimizer):
            self.moments.writes.add("optimizer_state")

    def clip(self, parameters: list[torch.Tensor], how: str) -> None:
        self.moments.reads.add("grad")

    def clipped(self, parameters: list[torch.Tensor], how: str) -> None:
        self._library_change()

    def _names_of_loss(self, roots: Sequence[torch.Tensor]) -> None:
        """The names the tensor backward runs from goes by (``loss``): a later statement
        assigning one of them is the loss line."""
        frame = sys._getframe(2)
        while frame is not None and self.frames_for(frame) is None:  # the user's innermost
            frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            return
        ids = {id(r) for r in roots}
        self.watched.loss_names |= {n for n, v in frame.f_locals.items() if id(v) in ids}

    def _library_change(self) -> None:
        """A change just heard, when a library made it (not the user's own statement): a
        moment of its own, at the library's statement."""
        made = library.changed_in(sys._getframe(1), self.frames_for)
        if made is not None:
            _, statement = library.statement_at(made)
            self._library_moment(statement, made)

    def library_completed(self, statement: Statement, frame: types.FrameType) -> None:
        """A statement of a library's loop completed: a moment when it changed a store (a
        library's step written by hand, ``d2l.SGD.step``)."""
        if self.watched.marks() != self.moments.before or self.moments.writes:
            self._library_moment(statement, frame)

    def _library_moment(self, statement: Statement, frame: types.FrameType) -> None:
        lender = self._innermost()
        self.watched.rename()  # a tensor a library's backward met: the library's name for it
        code = frame.f_code
        self.moments.take(statement, code.co_name, code.co_filename, self.passes.iteration)
        if not library.looping(frame, self.frames_for):  # a wrapper: maybe its caller's
            self.moments.borrow(lender)
        self.stepped = False
        self.capped()

    def _innermost(self) -> Frame | None:
        """The user's frame running now, innermost (None: none)."""
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None:
            state = self.frames_for(frame)
            if state is not None:
                return state
            frame = frame.f_back
        return None
