"""What a Lab holds, built from a Setup: the live model, its data, the optimizer, the loop
program and its counters, the rest of the loop's stores. The lines that change them are the
Lab's (``lab.py``); ``capture.py`` takes and restores them, ``answer.py`` reads them."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

import torch

from app.engine import scenarios
from app.engine.amp import Amp, check
from app.engine.effects import Setting
from app.engine.entries import Style
from app.engine.extras import Checkpoint, Running, Schedule
from app.engine.program import NO_BUGS, Toggles, describe, program_for, toggles_of
from app.engine.setup import Setup
from app.engine.state import LabState
from app.engine.views import LastView, LossPointView
from app.spec import spec
from app.spec.batches import Batches, MicroBatches
from app.spec.built import Built
from loop_stepper.stores.graph import Graph
from loop_stepper.stores.views import GraphView

HISTORY_LIMIT = 1000  # loss points kept per session: bounds memory and response size


class Parts:
    """A live model, loss function, optimizer and data, and the loop program over them, built
    from a Setup (kept as ``setup``: what the answers report it was created with).

    The setup's ``accumulate`` = k makes forward hand out the k micro-batches of each batch in
    turn and loss divide by k (the lesson's "accumulating on purpose"); its ``options`` are the
    scenario's own (the parabola's ``curvature`` and ``theta_star``).
    """

    initial: LabState  # the state right after the build (the Lab captures it)

    def __init__(self, setup: Setup) -> None:
        if setup.max_norm <= 0:
            raise ValueError("max_norm must be above 0")
        self.setup = setup
        built = self._build(setup)
        self.model, self.loss_fn = built.model, built.loss_fn
        accumulate = setup.accumulate
        self.batches: Batches | MicroBatches = (
            built.batches if accumulate == 1 else MicroBatches(built.batches, accumulate)
        )
        self.points, self.targets = built.points, built.targets
        self.optimizer = setup.optimizer.make(self.model.parameters(), setup.lr)
        self.schedule = Schedule(setup.scheduler, self.optimizer)
        # dropout draws from torch's default generator: each session keeps its own state
        self.rng = built.rng if setup.dropout > 0 or setup.spec is not None else None
        self.built = built  # a spec's validation split and classes, for the output view
        self.named = dict(self.model.named_parameters())
        check(setup.amp, self.dtype_of_params)
        self.amp = Amp(setup.amp)
        # the model's buffers are written in place (train, resume, restore): found once here, not
        # by a walk over its modules on every answer
        self.buffers = dict(self.model.named_buffers())
        self.setting = Setting(
            stateful=setup.optimizer.stateful,
            mode_matters=self.rng is not None or bool(self.buffers),
            buffers=bool(self.buffers),
            scheduler=setup.scheduler is not None,
            grad_scaler=self.amp.scaler is not None,
        )
        self.running = Running()
        self.ckpt = Checkpoint()
        self.autograd = Graph(self.named)
        how = None if setup.amp is None else setup.amp.dtype
        scaler = self.setting.grad_scaler
        self.style = Style(accumulate, setup.max_norm, setup.softmax_before_loss, how, scaler)
        # the setup's program, else the correct loop: either is in the initial state captured below
        self.program = list(setup.program) or program_for(NO_BUGS, accumulate, scaler)
        self.describe_program()
        self.cursor = 0
        self.iteration = 0  # forward calls so far
        self.steps = 0  # step calls so far
        self.losses = 0  # loss lines so far: the next history point's number n
        self.out: torch.Tensor | None = None
        self.y: torch.Tensor | None = None  # the targets of the batch forward drew
        self.x: torch.Tensor | None = None  # and its inputs (a prediction recomputes the loss)
        self.share = 1.0  # the micro-batch's share of its batch, when accumulating
        self.loss_tensor: torch.Tensor | None = None
        self.loss_value: float | None = None
        self.loss_spent = False  # a backward without retain_graph has freed the loss's graph
        # {n, iteration, loss, param} per loss line, made once: every answer sends them
        self.history: deque[LossPointView] = deque(maxlen=HISTORY_LIMIT)
        self.last: LastView | None = None

    @staticmethod
    def _build(setup: Setup) -> Built:
        if setup.spec is not None:  # scenario "custom"
            if (setup.dropout, setup.batchnorm, setup.softmax_before_loss) != (0.0, False, False):
                raise ValueError("dropout, batchnorm, softmax_before_loss: moons only")
            return spec.built(cast(spec.SpecJson, setup.spec), setup.seed, setup.dtype)
        model_options = scenarios.moons_options(
            setup.scenario, setup.dropout, setup.batchnorm, setup.softmax_before_loss, setup.dtype
        )
        return scenarios.build(setup.scenario, setup.seed, **setup.options, **model_options)

    @property
    def next_line(self) -> str:
        return self.program[self.cursor]

    @property
    def toggles(self) -> Toggles:
        return toggles_of(self.program)

    def describe_program(self) -> None:
        """What every answer says about the program; it changes only with the program."""
        self.described = describe(self.program, self.style)

    @property
    def max_norm(self) -> float:
        """clip_grad_norm's max_norm; the clipping line shows it, so a change rewrites it."""
        return self.style.max_norm

    @max_norm.setter
    def max_norm(self, value: float) -> None:
        if not value > 0:
            raise ValueError("max_norm must be above 0")
        self.style = replace(self.style, max_norm=value)
        self.describe_program()

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    @lr.setter
    def lr(self, value: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = value

    @property
    def dtype_of_params(self) -> torch.dtype:
        return next(iter(self.named.values())).dtype

    def graph(self) -> GraphView:
        out = None if self.out is None else str(self.out.dtype).removeprefix("torch.")
        return self.autograd.view(out)

    @property
    def optimizers(self) -> Sequence[torch.optim.Optimizer]:
        """The optimizers holding the parameters (a Lab has one): the stores' protocol."""
        return (self.optimizer,)
