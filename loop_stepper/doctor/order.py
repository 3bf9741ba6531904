"""The order of the loop's calls, read from each ``.grad`` buffer (``ledger.py``): a backward
onto a used gradient that a step then reads, a step before any backward, a clear between
backward and step, a clear of gradients no step used, clipping at the wrong moment, the
scheduler before the optimizer, a backward PyTorch refuses.

A step is what moves the parameters with their gradients: an optimizer's ``step()``, or the
loop's own arithmetic on them (``hands.py``), read alike. ``step(closure)`` reads what stands
in ``.grad`` once its closure ran: the closure's own clears and backwards (LBFGS, Lightning's
automatic optimization) or, when the closure only returns, the backward the loop ran before it
(Lightning's manual optimization). A parameter the optimizer holds and no backward reaches is
``no_gradient`` only where the forward used it (``uses.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.doctor import cuts, graphs, shards
from loop_stepper.doctor.chart import Chart, Optim
from loop_stepper.doctor.hands import HandSteps, leaves_held
from loop_stepper.doctor.ledger import GradBuffer
from loop_stepper.doctor.uses import ForwardUse
from loop_stepper.doctor.where import Place

Diagnosed = tuple[str, Place, dict[str, Any], int]  # a diagnosis to name: bug, at, evidence, when


class Order:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.ledger = doctor.ledger
        self.clips: dict[Place, str] = {}  # a clip's line: its first verdict stands
        self.hands = HandSteps()
        self.uses = ForwardUse(doctor)
        self.closure_from = 0  # the ledger's backwards when the running step(closure) began
        self.unheard: list[GradBuffer] | None = None  # leaves a hand-written backward updates
        # the backwards since the last step: where, and the mean loss each ran from (None: a
        # sum, or a loss scaled by 1/k)
        self.since_step: list[tuple[Place, str | None]] = []
        # an optimizer's first step that found none of its parameters with a gradient: named at
        # the second such step, or when the run ends after that one step
        self.first_never: dict[int, tuple[Optim, Diagnosed]] = {}

    def close(self) -> None:
        """The run ended: a last step by hand is read too, and a single step's missing
        gradients are named."""
        self.uses.remove()
        if not self.inside_closure:
            self._by_hand(stop=False)
        for o, (bug, at, evidence, iteration) in self.first_never.values():
            if o.steps == 1:
                self.doctor.name(bug, at, evidence, iteration)
        self.first_never.clear()

    @property
    def inside_closure(self) -> bool:
        return self.doctor.closure_stepping is not None

    @property
    def by_hand_only(self) -> bool:
        """No optimizer has stepped: the loop may move its parameters by hand."""
        return self.ledger.steps == self.doctor.hand_steps

    def closure_step(self, optimizer: torch.optim.Optimizer, before: bool) -> None:
        if before:
            self.closure_from = self.ledger.backwards

    def _between_evaluations(self) -> None:
        """Inside ``step(closure)``, a clear or a backward after the closure's own backward: the
        optimizer read those gradients in between (LBFGS evaluates its closure again)."""
        for b in self.ledger.buffers.values():
            if b.state == "fresh" and b.written_at > self.closure_from:
                b.state = "used"

    # -- backward ----------------------------------------------------------------------

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        doctor = self.doctor
        if self.inside_closure:
            self._between_evaluations()
        else:
            if self._by_hand():
                doctor.backward_iteration = doctor.iteration  # the step by hand just counted
            if self.by_hand_only and doctor.sampled():
                _, leaves = graphs.walk(roots)
                self.hands.forget(self.ledger.reached(leaves))
            self.since_step.append((doctor.backward_at, _mean_loss(roots)))
        self.ledger.before_backward(doctor.backward_at)

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        doctor = self.doctor
        at, it = doctor.backward_at, doctor.backward_iteration
        written, reset = self.ledger.after_backward(at, it, doctor.sampled())
        if reset:
            cleared = reset[0].cleared
            assert cleared is not None
            params = doctor.names(b.param for b in reset)
            doctor.name("accumulation_reset", cleared, {"params": params})
            for buffer in reset:
                buffer.cleared = None
        if self.by_hand_only and not self.inside_closure:
            self.hands.remember(written)

    def failed_backward(self, roots: Sequence[torch.Tensor], error: BaseException) -> None:
        said, doctor = str(error), self.doctor
        if "backward through the graph a second time" in said:
            doctor.name("backward_twice", doctor.place(), {"error": said})
        elif "does not require grad and does not have a grad_fn" in said:
            evidence = {"params": "any parameter", "error": f" ({said})"}
            doctor.name("no_gradient", doctor.place(), evidence)

    # -- step ----------------------------------------------------------------------------

    def before_step(self, optimizer: torch.optim.Optimizer) -> None:
        """What the step about to run reads from each .grad (a closure's: once it ran)."""
        if self.hands.prints:
            self.hands.forget()  # the optimizer moves its parameters from here on
        if self.doctor.closure_stepping is None:
            self._read(optimizer)

    def after_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.doctor.closure_stepping is not None:
            self._read(optimizer)

    def _read(self, optimizer: torch.optim.Optimizer) -> None:
        doctor = self.doctor
        self._accumulated()
        o, at = doctor.optimizer(optimizer), doctor.place()
        buffers = self.ledger.track(p for g in optimizer.param_groups for p in g["params"])
        read: dict[str, list[GradBuffer]] = {
            k: [] for k in ("stale", "first", "again", "cleared", "zeros", "never")
        }
        for b in buffers:
            self.ledger.sync(b, at)
            if b.state == "stale":
                read["stale"].append(b)
                b.state = "used"
            elif b.state == "fresh":
                b.state = "used"
            elif b.state == "used":
                if o.backwards_since == 0:
                    read["again"].append(b)
            elif b.cleared is not None:
                read["zeros" if b.cleared_to_zeros else "cleared"].append(b)
            elif not b.written and doctor.backwards == 0 and o.steps == 0:
                read["first"].append(b)
            elif b.param.grad is None and o.backwards_since > 0 and b.param.requires_grad:
                read["never"].append(b)
        self._stale(read["stale"])
        self._name(o, at, read)
        if read["never"]:
            self._never(o, read["never"], sum(b.param.requires_grad for b in buffers))

    def _by_hand(self, stop: bool = True) -> bool:
        """The parameters the loop moved by hand since a backward wrote their gradients: a step
        that read those gradients (a stale one is ``skip_zero_grad``), counted as one."""
        moved = self.hands.moved() if self.hands.prints else []
        if not moved:
            return False
        self._stale([b for b in moved if b.state == "stale"])
        for b in moved:
            if b.state in ("fresh", "stale"):
                b.state = "used"
        self._accumulated()
        self.doctor.stepped_by_hand(stop)
        return True

    def _accumulated(self) -> None:
        """A step reads what the backwards since the last one added: k of a mean loss at one
        statement, none divided by k, add k means (``accumulation_unscaled``); backwards of
        different statements (a GAN's real and fake losses) are different losses, not named."""
        since, self.since_step = self.since_step, []
        by_line: dict[Place, list[str | None]] = {}
        for at, mean in since:
            by_line.setdefault(at, []).append(mean)
        for at, means in by_line.items():
            if len(means) >= 2 and all(means):
                evidence = {"backwards": len(means), "loss": means[0], "divided": False}
                self.doctor.name("accumulation_unscaled", at, evidence)

    def _stale(self, stale: list[GradBuffer]) -> None:
        if stale:
            b = stale[0]
            assert b.stale is not None
            made_at, it = b.stale
            evidence: dict[str, Any] = {"param": self.doctor.names([b.param])[0], **b.stale_numbers}
            self.doctor.name("skip_zero_grad", made_at, evidence, it)
        for b in stale:
            b.state = "used"

    def _name(self, o: Optim, at: Place, read: dict[str, list[GradBuffer]]) -> None:
        doctor = self.doctor
        if read["first"] or read["again"]:
            first = bool(read["first"])
            said = "None" if first else "the gradient an earlier step() had already used"
            moved = "moved nothing" if first else "moved the weights by it again"
            doctor.name("step_first", at, {"read": said, "moved": moved, "grad": said})
            o.stepped_first = True
        if read["cleared"] and not o.stepped_first:
            doctor.name("zero_grad_before_step", read["cleared"][0].cleared or at, {"grad": "None"})
        if read["zeros"] and not o.stepped_first:
            moves = _moves_without_gradient(o.optimizer)
            moved = (
                ": momentum or weight decay still moved the weights"
                if moves
                else f": {o.kind} moved nothing"
            )
            evidence = {"grad": "zeros", "moved": moved, "momentum_or_decay": moves}
            doctor.name("zeros", read["zeros"][0].cleared or at, evidence)
        for b in read["cleared"] + read["zeros"]:
            b.cleared = None

    def _never(self, o: Optim, never: list[GradBuffer], trainable: int) -> None:
        """Parameters the optimizer holds that the backward did not reach, at two steps: named
        when the forward used them (a detach, a branch cut) or when none of the ``trainable``
        ones it holds got a gradient (also after one step, when the run ends there, and then
        where the loss went instead: ``cuts.py``); a sub-module the forward never calls is not
        a bug."""
        doctor = self.doctor
        if len(never) == trainable:
            o.without_gradient += 1
            if o.without_gradient == 1:  # named now, while the loop's frames run
                self.first_never[id(o)] = (o, self._nowhere(o, [b.param for b in never]))
            elif o.without_gradient == 2 and id(o) in self.first_never:
                doctor.name(*self.first_never.pop(id(o))[1])
            return
        found = self.uses.judge([b.param for b in never])
        if found:
            doctor.name("no_gradient", doctor.backward_at, {"params": doctor.names(found)})

    def _nowhere(self, o: Optim, params: list[torch.Tensor]) -> Diagnosed:
        """The diagnosis of a step that found none of its parameters with a gradient."""
        doctor = self.doctor
        names = doctor.names(params)
        held = set().union(*(x.params for x in doctor.optimizers.values()))
        instead = cuts.went(doctor.frames(), held)
        at, evidence = doctor.backward_at, dict[str, Any](params=names)
        if instead is not None and instead.module is not None:
            doctor.accounted.update(id(p) for p in instead.module.parameters())
            seen = shards.gathered(instead.module.parameters())  # FSDP's, when sharded
            doctor.sharded |= seen
            if o.made_at is not None and seen:
                evidence = {"optimizer": o.kind, "model": instead.name}
                return "optimizer_before_fully_shard", o.made_at, evidence, doctor.iteration
            if not cuts.copied(instead.module, params) and o.made_at is not None:
                trains = cuts.holder(doctor.frames(), params)
                evidence = {"optimizer": o.kind, "trains": trains, "reached": instead.name}
                return "optimizer_wrong_model", o.made_at, evidence, doctor.iteration
            went = (
                f" (the forward ran {instead.name}, a copy with the same numbers, whose "
                "parameters got the gradients)"
            )
        elif instead is not None:
            went = (
                f" (the graph was cut where {instead.name} was made anew with "
                f"requires_grad=True: backward() stopped there and filled {instead.name}.grad)"
            )
        else:
            return "no_gradient", at, evidence, doctor.iteration
        if instead.at[1] is not None:
            at = instead.at
        return "no_gradient", at, {**evidence, "went": went}, doctor.iteration

    def loss_input(self, how: str, logits: torch.Tensor) -> None:
        """A loss computed with autograd off before any backward: the loop may write its
        backward by hand (makemore part 4), and its updates of the tensors that require grad are
        its steps (they move no gradient a backward wrote: counted, nothing to read)."""
        doctor = self.doctor
        if doctor.backwards or logits.grad_fn is not None or not self.by_hand_only:
            return
        if self.unheard is None:
            self.unheard = self.ledger.track(leaves_held(doctor.frames()))
        else:
            self._by_hand()
        self.hands.remember(self.unheard)

    # -- the other calls -------------------------------------------------------------------

    def zero_grad(self, owner: torch.optim.Optimizer | nn.Module, set_to_none: bool) -> None:
        if self.inside_closure:
            self._between_evaluations()
        else:
            self._by_hand()
        at = self.doctor.place()
        if isinstance(owner, torch.optim.Optimizer):
            self.doctor.optimizer(owner)
            params: Iterable[torch.Tensor] = (p for g in owner.param_groups for p in g["params"])
        else:
            params = owner.parameters()
        for b in self.ledger.track(params):
            self.ledger.sync(b, at, zeroed=True)

    def clip(self, parameters: list[torch.Tensor], how: str) -> None:
        if not self.inside_closure:
            self._by_hand()
        doctor = self.doctor
        at = doctor.place()
        buffers = self.ledger.track(p for p in parameters if p.requires_grad)
        for b in buffers:
            self.ledger.sync(b, at)
        if at in self.clips or not buffers:
            return
        states = {b.state for b in buffers}
        if states <= {"empty"} and self.since_step:
            return  # this iteration's backward ran and reached none of them: no_gradient's
        if states <= {"empty"} or "stale" in states:
            empty = all(b.param.grad is None for b in buffers)
            read = "every .grad was None" if empty else "the stale buffers of the last iteration"
            self.clips[at] = "clip_before_backward"
            doctor.name("clip_before_backward", at, {"read": read, "how": how})
        elif "used" in states:
            self.clips[at] = "clip_after_step"
            doctor.name("clip_after_step", at, {"how": how, "grad": "already used by a step"})
        else:
            self.clips[at] = "ok"

    def scheduler_step(self, scheduler: Any) -> None:
        optimizer = getattr(scheduler, "optimizer", None)
        if not isinstance(optimizer, torch.optim.Optimizer):
            return
        called = getattr(optimizer, "_opt_called", None)
        o = self.doctor.optimizers.get(id(optimizer))
        never = called is False if called is not None else (o is None or o.steps == 0)
        if not never:
            return
        lr = optimizer.param_groups[0].get("lr")
        stepping = next(
            (
                s
                for s in self.doctor.optimizers.values()
                if s.steps and s.optimizer is not optimizer
            ),
            None,
        )
        kind = type(optimizer).__name__
        if stepping is None:
            evidence = {"optimizer": kind, "lr": lr, "optimizer_steps": 0}
            self.doctor.name("scheduler_before_step", self.doctor.place(), evidence)
            return
        scheduled = f"the {kind}"
        if o is not None and o.made_at is not None and o.made_at[1] is not None:
            scheduled += f" made at line {o.made_at[1]}"
        stepped = stepping.optimizer.param_groups[0].get("lr")
        made = stepping.made_at[1] if stepping.made_at else None
        evidence = {
            "scheduled": scheduled,
            "stepping": f"the {stepping.kind}" + (f" made at line {made}" if made else ""),
            "lr": stepped,
            "scheduled_lr": lr,
        }
        self.doctor.name("scheduler_other_optimizer", self.doctor.place(), evidence)


def _mean_loss(roots: Sequence[torch.Tensor]) -> str | None:
    """The mean loss a backward runs from (its graph's last node a loss of reduction ``mean``,
    or a ``mean()``), by its node's name; None for a sum or a scaled loss (``loss / k``)."""
    fn = roots[0].grad_fn if roots else None
    if fn is None:
        return None
    name = type(fn).__name__
    if getattr(fn, "_saved_reduction", None) == 1 or name.startswith("MeanBackward"):
        return name
    return None


def _moves_without_gradient(optimizer: torch.optim.Optimizer) -> bool:
    """Whether a step moves a parameter whose .grad is zeros: weight decay does; so does SGD's
    momentum, and any other optimizer's state once it holds a number that is not zero (Adam's
    running averages after a real step). Adam's or AdamW's first step without decay on zeros
    moves nothing (its averages are zeros too)."""
    groups = optimizer.param_groups
    if any(g.get("weight_decay", 0) for g in groups):
        return True
    if isinstance(optimizer, torch.optim.SGD):
        return any(g.get("momentum", 0) for g in groups)
    return any(
        isinstance(v, torch.Tensor) and v.is_floating_point() and bool(shards.local(v).any())
        for state in optimizer.state.values()
        for key, v in state.items()
        if key != "step"  # a count, not a number a step moves the weights by
    )
