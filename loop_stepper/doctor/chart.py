"""``Chart``: what the doctor knows of the run, shared by its checks (``doctor.py`` puts them
together). Told by the probe what the loop does (``loop_stepper/recorder/probe.py``), it names each
silent bug at the statement whose numbers show it (``bugs.py``), once per bug and line.

It reads and never writes: marks and versions of tensors, a few of their numbers, walks of the
graph. The checks are three, by what they read: the order of the calls on each ``.grad``
(``order.py``), what a backward reaches (``reach.py``), the state around the loop
(``state.py``). The cheap checks run at every call; the walks at the first ``FULL``
iterations and then one in ``EVERY``. The doctor keeps what they share: where and when a call
is, the optimizers and their steps, the ledger of ``.grad`` buffers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from loop_stepper.doctor import graphs, where
from loop_stepper.doctor.bugs import Diagnosis, message
from loop_stepper.doctor.ledger import Ledger
from loop_stepper.doctor.silence import silenced
from loop_stepper.doctor.where import Place
from loop_stepper.recorder.internal import InternalError
from loop_stepper.recorder.observer import EVENTS, Observer

FULL = 4  # iterations checked in full at the start
EVERY = 32  # then one in this many
# A job's rank: its one-process checks watch its first AWAKE iterations, then one in
# AWAKE_EVERY (its checks of the job, ``always``, watch every one): the HOT events, those of
# every iteration, are not told them in between.
AWAKE = 64
AWAKE_EVERY = 128
HOT = frozenset(
    {"zero_grad", "before_backward", "after_backward", "before_step", "after_step", "batch"}
    | {"loss_input", "data_read", "clip", "clipped"}
)
Kept = Callable[[], Iterable[tuple[str, Any, Place | None]]]
HAND = 0  # the primary "optimizer" of a loop that steps by hand (no object's id)


class Stopped(BaseException):
    """Raised out of ``optimizer.step()`` after the iterations asked for (a BaseException: the
    loop's own ``except Exception`` does not swallow it)."""


class Check(Protocol):
    def close(self) -> None: ...


@dataclass(eq=False)
class Optim:
    """An optimizer as the doctor knows it: where it was made, its steps, its parameters."""

    optimizer: torch.optim.Optimizer
    made_at: Place | None
    steps: int = 0
    backwards_since: int = 0  # backwards since its last step
    stepped_first: bool = False  # step_first named: its clears are that bug, not another
    without_gradient: int = 0  # steps after a backward that reached none of some parameters
    fresh_after_resume: bool = False
    params: set[int] = field(default_factory=set)

    @property
    def kind(self) -> str:
        return type(self.optimizer).__name__

    def tensors(self) -> list[torch.Tensor]:
        """The parameters it holds, in its groups' order."""
        return [p for group in self.optimizer.param_groups for p in group["params"]]


class Chart(Observer):
    def __init__(
        self,
        *,
        iterations: int | None = None,
        locate: Callable[[], Place] | None = None,
        iteration: Callable[[], int] | None = None,
        moment: Callable[[], int] | None = None,
        frames: Callable[[], Iterable[Any]] | None = None,
        kept: Kept | None = None,
        named: Callable[[], dict[int, str]] | None = None,
    ) -> None:
        self.limit = iterations
        self._locate = locate or (lambda: where.place(1))
        self._iteration = iteration
        self._moment = moment
        self.frames = frames or (lambda: where.their_frames(1))
        self.kept = kept
        self._named_by = named
        self.checks: list[Check] = []
        self.internal_error: InternalError | None = None  # ours, that stopped the doctor
        self.forget()

    def forget(self) -> None:
        """Start afresh: no diagnoses, nothing known of the loop (a session's new program)."""
        for check in self.checks:
            check.close()
        self.diagnoses: list[Diagnosis] = []
        self.silenced: list[Diagnosis] = []  # named on a line that says # doctor: ignore[…]
        self._named: set[tuple[str, str | None, int | None]] = set()
        self.ledger = Ledger()
        self.optimizers: dict[int, Optim] = {}
        self.primary: int | None = None
        self.accounted: set[int] = set()  # parameters a diagnosis has told of already
        self.sharded: set[tuple[int, ...]] = set()  # FSDP's parameters' shapes, seen sharded
        self.primary_at: Place | None = None  # where it was made: one re-made there counts
        self.primary_steps = 0
        self.hand_steps = 0  # steps the loop wrote by hand (hands.py)
        self.backwards = 0
        self.backward_at: Place = (None, None)
        self.backward_iteration = 1
        self.finite = True  # nonfinite is named once, at the first
        self.scaler_stepping: torch.optim.Optimizer | None = None
        self.scaler_used = False
        self.closure_stepping: torch.optim.Optimizer | None = None  # step(closure) running
        self.lockstep = False  # a rank of a job: stopped by its backwards (lockstep.py)
        self.checks = self.examine()
        self._by_event = {e: [getattr(c, e) for c in self.checks if hasattr(c, e)] for e in EVENTS}
        self._always = {
            e: [getattr(c, e) for c in self.checks if getattr(c, "always", False) and hasattr(c, e)]
            for e in HOT
        }
        self.dormant = False  # a job's rank between the iterations its one-process checks watch

    def examine(self) -> list[Check]:
        """The checks, made afresh for this chart."""
        return []

    # -- where and when ------------------------------------------------------------------

    def place(self) -> Place:
        return self._locate()

    @property
    def iteration(self) -> int:
        return self._iteration() if self._iteration else self.primary_steps + 1

    def sampled(self) -> bool:
        it = self.iteration
        return it <= FULL or it % EVERY == 0

    def name(
        self, bug: str, at: Place, evidence: dict[str, Any], iteration: int | None = None
    ) -> None:
        key = (bug, *at)
        if key in self._named:
            return
        self._named.add(key)
        found: Diagnosis = {
            "bug": bug,
            "file": at[0],
            "line": at[1],
            "iteration": self.iteration if iteration is None else iteration,
            "message": message(bug, evidence),
            "evidence": evidence,
        }
        if self._moment is not None:
            found["moment"] = self._moment()  # type: ignore[typeddict-unknown-key]
        if silenced(bug, *at):  # ``# doctor: ignore[bug]`` on that line
            self.silenced.append(found)
        else:
            self.diagnoses.append(found)

    def names(self, tensors: Iterable[torch.Tensor]) -> list[str]:
        """What the user calls each tensor (``model.0.weight``), else where an optimizer
        holds it, else its shape."""
        known = self._named_by() if self._named_by else graphs.names(self.frames())
        held = {
            id(p): f"{o.kind}.param_groups[{g}][{i}]"
            for o in self.optimizers.values()
            for g, group in enumerate(o.optimizer.param_groups)
            for i, p in enumerate(group["params"])
        }
        return [
            known.get(id(t)) or held.get(id(t)) or f"a tensor of shape {list(t.shape)}"
            for t in tensors
        ]

    def optimizer(self, optimizer: torch.optim.Optimizer, made_at: Place | None = None) -> Optim:
        o = self.optimizers.get(id(optimizer))
        if o is None:
            o = self.optimizers[id(optimizer)] = Optim(optimizer, made_at)
            while len(self.optimizers) > 16:
                self.optimizers.pop(next(iter(self.optimizers)))
        o.params = set(map(id, o.tensors()))
        return o

    def facts(self) -> dict[str, Any] | None:
        """What a job's rank tells the job at its end (``ranks.py``; None: no job's rank)."""
        for check in self.checks:
            told = getattr(check, "facts", None)
            if told is not None:
                return told()  # type: ignore[no-any-return]
        return None

    def close(self) -> None:
        """The run ended (the block, the script, the replay): each check closes (and lets go of
        its hooks), also after an internal error stopped the doctor."""
        for check in self.checks:
            try:
                check.close()
            except Exception as error:
                self.failed("close", error)

    def failed(self, hook: str, error: Exception) -> None:
        """An internal error in ``hook``: the doctor stops watching there; the user's code runs
        on; ``internal_error`` keeps it for a bug report, and the findings so far stand."""
        first = not self.off
        self.off = True
        if first:
            at: Place = (None, None)
            with contextlib.suppress(Exception):
                at = self.place()
            self.internal_error = InternalError.of("doctor", hook, error, *at)

    def _tell(self, event: str, *args: Any) -> None:
        methods = self._always[event] if self.dormant and event in HOT else self._by_event[event]
        for method in methods:
            method(*args)

    # -- what the doctor itself counts, around the checks ----------------------------------

    def before_backward(self, roots: Any, retain_graph: bool) -> None:
        if not self.dormant:  # (between the iterations watched, the last watched one's)
            self.backward_at, self.backward_iteration = self.place(), self.iteration
        self.backwards += 1
        for o in self.optimizers.values():
            o.backwards_since += 1
        self._tell("before_backward", roots, retain_graph)

    def before_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.scaler_stepping is not optimizer:  # else told when the scaler's step began
            self._tell("before_step", optimizer)

    def after_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.scaler_stepping is not optimizer:
            self._tell("after_step", optimizer)
            self.stepped(self.optimizer(optimizer))

    def scaler_step(self, optimizer: torch.optim.Optimizer, before: bool) -> None:
        """``scaler.step(optimizer)`` is the loop's step, also when it skips the optimizer's."""
        self.scaler_used = True
        if before:
            self._tell("before_step", optimizer)
            self.scaler_stepping = optimizer
        else:
            self.scaler_stepping = None
            self._tell("after_step", optimizer)
            self.stepped(self.optimizer(optimizer))

    def closure_step(self, optimizer: torch.optim.Optimizer, before: bool) -> None:
        self.closure_stepping = optimizer if before else None
        self._tell("closure_step", optimizer, before)

    def stepped_by_hand(self, stop: bool = True) -> None:
        """A step written by hand was seen: counted as the first optimizer's are, in a loop
        that has none (with ``stop``, the loop stops after the iterations asked for)."""
        self.hand_steps += 1
        self.ledger.steps += 1
        if self.primary is None:
            self.primary = HAND
        if self.primary == HAND:
            self._count(stop)

    def stepped(self, o: Optim) -> None:
        """A step of ``o`` ended (a GradScaler's skipped step too): count it; after the
        iterations asked for, stop the loop."""
        o.steps += 1
        o.backwards_since = 0
        self.ledger.steps += 1
        if self.primary is None:
            self.primary, self.primary_at = id(o.optimizer), o.made_at
        remade = o.made_at is not None and o.made_at == self.primary_at  # made anew at its line
        if id(o.optimizer) == self.primary or remade:
            self._count()

    def _count(self, stop: bool = True) -> None:
        self.primary_steps += 1
        it = self.primary_steps + 1  # the next iteration: watched by every check, or not
        self.dormant = self.lockstep and not (it <= AWAKE or it % AWAKE_EVERY == 0)
        if (
            stop
            and not self.lockstep
            and self.limit is not None
            and self.primary_steps >= self.limit
        ):
            raise Stopped(f"stopped after {self.limit} steps")


def _relay(event: str) -> Callable[..., None]:
    def relay(self: Chart, *args: Any) -> None:
        self._tell(event, *args)

    relay.__name__ = event
    return relay


for _event in EVENTS:
    if _event not in vars(Chart):
        setattr(Chart, _event, _relay(_event))
