"""What a backward reaches: the graph of an eval-mode forward (a training pass in eval mode, or
a validation pass that built a graph for nothing), parameters no optimizer holds, loss graphs
a reference keeps across iterations (``holders.py``: more iterations' at every look; named at
the statement that stores it, ``lookout.py``), the same loss twice, a float16 graph without a
scaler."""

from __future__ import annotations

import contextlib
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import nn

from loop_stepper.doctor import graphs, shards
from loop_stepper.doctor.chart import Chart
from loop_stepper.doctor.evals import EvalForward, Evals
from loop_stepper.doctor.holders import LABELS, Keeper, Spent, holders, node_key, owner
from loop_stepper.doctor.lookout import Lookout
from loop_stepper.doctor.where import Place

KEPT_ROOTS = 16  # the newest roots retain_graph kept, remembered (the same loss twice)
HOLDERS = 256  # holders whose counts are remembered between looks
OWNERS = 4  # the user's objects that made an optimizer, remembered (weakly)


class Reach:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.evals = Evals(doctor, doctor.place)
        self.spent = Spent()  # roots whose graph a backward freed, by iteration
        self.counts: OrderedDict[tuple[Any, ...], int] = OrderedDict()  # holder -> iterations
        # holders found growing: the iteration of that look and the iterations' graphs kept
        self.suspected: dict[tuple[Any, ...], tuple[int, int]] = {}
        self.lookout = Lookout(doctor, self._stores)
        self.owners: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self.retained: OrderedDict[int, None] = OrderedDict()  # roots kept by retain_graph
        self.scaled_outputs: dict[int, torch.Tensor] = {}  # what GradScaler.scale gave since
        self.fp16 = False  # a float16 autocast entered since the last backward
        self.orphans: dict[int, tuple[torch.Tensor, int]] = {}

    def close(self) -> None:
        """Eval forwards no backward used were validation with a graph; a store still looked
        out for gets its line from the code, and the tracing ends."""
        for forward in self.evals.take():
            self._validation(forward)
        self.evals.remove()
        self.lookout.close()

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        doctor = self.doctor
        at = doctor.backward_at
        for r in roots:
            if r.grad_fn is not None and node_key(r.grad_fn) in self.retained:
                doctor.name("backward_twice_retain", at, {"loss": _value(r), "times": 2})
        if self.fp16 and not any(id(r) in self.scaled_outputs for r in roots):
            doctor.name("float16_without_scaler", at, {"autocast": "float16", "scaler": None})
        self.fp16 = False
        self.scaled_outputs.clear()
        self.lookout.backward()
        pending = self.evals.take()
        sampled = doctor.sampled()
        if not pending and not sampled:
            return
        ids, leaves = graphs.walk(roots)
        for forward in pending:
            if id(forward.fn) not in ids:
                self._validation(forward)
            elif modes := forward.modes:
                doctor.name("eval_while_training", at, {"modules": modes})
        if sampled:
            self._orphans(leaves)
            self._kept_graphs(frozenset(node_key(r.grad_fn) for r in roots if r.grad_fn))

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        label = self.doctor.primary_steps
        for r in roots:
            if r.grad_fn is None:
                continue
            if retain_graph:
                self.retained[node_key(r.grad_fn)] = None
                while len(self.retained) > KEPT_ROOTS:
                    self.retained.popitem(last=False)
            else:
                self.spent.add(r.grad_fn, label)

    def optimizer_made(self, optimizer: torch.optim.Optimizer) -> None:
        """The user's object making the optimizer (``configure_optimizers``' ``self``) is
        looked at for kept graphs too: a framework may hold it where no name of theirs does."""
        made_by = owner(self.doctor.frames())
        if made_by is not None:
            with contextlib.suppress(TypeError):  # an object no weak reference can hold
                self.owners[id(made_by)] = made_by
                while len(self.owners) > OWNERS:
                    del self.owners[next(iter(self.owners))]

    def mode_set(self, module: nn.Module, training: bool) -> None:
        self.evals.mode(module, training)

    def autocast(self, dtype: torch.dtype, enabled: bool) -> None:
        if enabled and dtype == torch.float16:
            self.fp16 = True

    def scaled(self, scaled: Any) -> None:
        if isinstance(scaled, torch.Tensor):
            self.scaled_outputs[id(scaled)] = scaled

    # -- the walks -------------------------------------------------------------------------

    def _validation(self, forward: EvalForward) -> None:
        module = type(forward.module).__name__
        evidence = {"nodes": graphs.chain(forward.fn), "output": forward.shape, "module": module}
        self.doctor.name("validation_with_grad", forward.where, evidence)

    def _orphans(self, leaves: list[torch.Tensor]) -> None:
        """Parameters a backward reaches that no optimizer holds, the same object at two
        backwards: an ``nn.Parameter``, or a tensor a module of the user's holds as a plain
        attribute with ``requires_grad`` (GeM's ``p``: ``model.parameters()`` leaves it out)."""
        doctor = self.doctor
        if not doctor.optimizers or doctor.ledger.steps == 0:
            return
        held = set().union(*(o.params for o in doctor.optimizers.values()))
        now: dict[int, tuple[torch.Tensor, int]] = {}
        for leaf in leaves:
            if leaf.requires_grad and id(leaf) not in held and id(leaf) not in doctor.accounted:
                _, seen = self.orphans.get(id(leaf), (leaf, 0))
                now[id(leaf)] = (leaf, seen + 1)
        # a parameter is remembered; another tensor only while the backwards reach it (a
        # tensor made anew each iteration is never the same object twice)
        kept = {k: v for k, v in self.orphans.items() if isinstance(v[0], nn.Parameter)}
        self.orphans = kept | now
        found = [leaf for leaf, seen in now.values() if seen >= 2]
        if found:  # FSDP's whole parameters, gathered for the shards the models (when
            # resharded) and the optimizers (made after fully_shard) hold
            held_now = [p for o in doctor.optimizers.values() for p in o.tensors()]
            modules = [p for m in _modules(doctor.frames()) for p in m.parameters()]
            shapes = doctor.sharded | shards.gathered([*held_now, *modules])
            found = [f for f in found if not shards.gathers(f, shapes)]
        if any(not isinstance(leaf, nn.Parameter) for leaf in found):
            attributes = {id(t) for m in _modules(doctor.frames()) for _, t in graphs.attributes(m)}
            found = [f for f in found if isinstance(f, nn.Parameter) or id(f) in attributes]
        if found:
            self._not_held(found, held)

    def _not_held(self, found: list[torch.Tensor], held: set[int]) -> None:
        doctor = self.doctor
        evidence: dict[str, Any] = {"params": doctor.names(found)}
        named = graphs.names(doctor.frames())
        gone = [i for i in held if i not in named]
        if any(not isinstance(t, nn.Parameter) for t in found):
            evidence["why"] = (
                " (a tensor attribute that requires grad, not an nn.Parameter: "
                "model.parameters() leaves it out)"
            )
        elif gone:
            evidence["why"] = (
                f" (the optimizer holds {len(gone)} parameters no module of yours has any more: "
                "a layer replaced after the optimizer was made)"
            )
        first = next(iter(doctor.optimizers.values()))
        doctor.name("not_in_optimizer", first.made_at or doctor.backward_at, evidence)

    def _kept_graphs(self, current: frozenset[int]) -> None:
        """References that keep more iterations' loss graphs at every look (``running_loss +=
        loss``, ``losses.append(loss)``): the statement that stores them is looked out for."""
        if not self.spent:
            return
        for holder, value, at in self._holders():
            if holder.key in self.suspected:
                continue  # named, or its store looked out for
            n = self.spent.count(value, current)
            before = self.counts.pop(holder.key, None)
            self.counts[holder.key] = n
            while len(self.counts) > HOLDERS:
                self.counts.popitem(last=False)
            # more iterations' at this look than at the last one (or at both, more than the
            # doctor remembers): the graphs it keeps grow with the run
            if n < 2 or before is None or (n <= before and n < LABELS):
                continue
            self.suspected[holder.key] = (self.doctor.iteration, n)
            if at is not None:
                self._stores(holder, at)
            else:
                self.lookout.watch(holder, value)

    def _stores(self, holder: Keeper, at: Place) -> None:
        """Name the holder at the statement that stored it, with the iteration and count of the
        look that found it growing."""
        iteration, graphs_kept = self.suspected.get(holder.key, (None, 2))
        value = holder.get()
        kept = value if isinstance(value, list | tuple | deque) else [value]
        fns = [t.grad_fn for t in kept if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        evidence = {"name": holder.name, "nodes": graphs.chain(*fns), "graphs": graphs_kept}
        self.doctor.name("log_tensor", at, evidence, iteration)

    def _holders(self) -> Iterator[tuple[Keeper, Any, Place | None]]:
        """Each holder and what it holds, with where it is stored when the caller knows."""
        if self.doctor.kept is not None:
            for name, value, at in self.doctor.kept():
                holder = Keeper(name, ("kept", name), lambda v=value: v, None)  # type: ignore[misc]
                yield holder, value, at or self.doctor.backward_at
            return
        for holder, value in holders(self.doctor.frames(), list(self.owners.values())):
            yield holder, value, None


def _modules(frames: Any) -> Iterator[nn.Module]:
    """The modules the user's names hold."""
    for _, _, value in graphs.scopes(frames):
        if isinstance(value, nn.Module):
            yield value


def _value(t: torch.Tensor) -> float:
    with torch.no_grad():
        return float(t.detach().reshape(-1)[0])
