"""What the recorder watches, found as the user's code runs, never configured: the tensors
that require a gradient which the cell's names reach (``W1``, ``model.0.weight``), every
optimizer that runs and the parameters it holds, any leaf a backward reaches, the loss and its
graph. Each parameter goes by the best name the namespace reaches it by once the statement has
finished (``names.py``), one tensor to a name.

``Watched`` is the engine's ``Stores`` protocol (``loop_stepper/stores/draw.py``), so a recorded
moment's stores are drawn by the same function as a Lab's; ``marks`` tells which of those
stores a statement changed, from the tensors' versions (every in-place change bumps one) and,
after a change through ``.data`` (which bumps none of the tensor's own), from their contents;
a tensor sent element by element is compared by its bytes after every statement.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch.nn.parameter import is_lazy

from loop_stepper.recorder.contents import Contents
from loop_stepper.recorder.files import INSIDE, parsed
from loop_stepper.recorder.names import (
    LOCAL,
    LOCAL_LOOP,
    LOOP_VARIABLE,
    NAMESPACE,
    OPTIMIZER,
    SELF,
    Rank,
    dull,
    held_by,
    leaves,
    rank,
    running,
    search,
)
from loop_stepper.recorder.naming import HOMED, MADE_UP_RANK, Naming, root
from loop_stepper.stores.graph import Graph
from loop_stepper.stores.views import GraphView

STORES = ("params", "graph", "grad", "loss", "optimizer_state")


class Watched:
    """The stores of the user's own loop, as far as the run has shown them. ``space`` is the
    cell's namespace the names are searched in, ``loop_variables`` the names a loop of the
    source binds (``p``: a name of last resort)."""

    def __init__(
        self, space: Mapping[str, Any] | None = None, loop_variables: frozenset[str] = frozenset()
    ) -> None:
        self.space: Mapping[str, Any] = {} if space is None else space
        self.loop_variables = loop_variables
        self.params: dict[str, torch.Tensor] = {}  # shown, by name, in the order first met
        # trained: held by an optimizer, given a .grad by a backward, or stepped by hand; once
        # any is, only those are shown (a teacher no optimizer holds is not)
        self._trained: set[int] = set()
        self._tensors: dict[int, torch.Tensor] = {}  # id -> tensor (held: ``params`` holds it)
        self.naming = Naming()
        self.shows = 0  # how often ``params`` was made again (a name or a tensor may differ)
        self._local_loops: frozenset[str] = frozenset()  # the walked function's loop variables
        self._new = False  # a tensor was added since the last search of the namespace
        self._lost: set[int] = set()  # ids of tensors that lost their name: named again or gone
        self._lazy: dict[int, tuple[torch.Tensor, str, Rank]] = {}  # lazy parameters, not made
        self.contents = Contents()  # what each holds, to tell which a statement changed
        self._optimizers: list[torch.optim.Optimizer] = []
        self._seen: dict[int, int] = {}  # ids of the optimizers met so far: the params held
        self.autograd = Graph({})
        self.loss: torch.Tensor | None = None
        self.loss_names: set[str] = set()  # the names backward was called through (``loss``)
        self.spent: dict[int, Any] = {}  # grad_fns a backward freed, held (not weak-referable)
        self._loss_value: tuple[int, int, float] | None = None

    # -- the protocol ----------------------------------------------------------------

    @property
    def named(self) -> Mapping[str, torch.Tensor]:
        return self.params

    @property
    def optimizers(self) -> Sequence[torch.optim.Optimizer]:
        return self._optimizers

    @property
    def loss_value(self) -> float | None:
        loss = self.loss
        if loss is None:
            return None
        key = (id(loss), loss._version)
        if self._loss_value is None or self._loss_value[:2] != key:
            self._loss_value = (*key, loss.item())
        return self._loss_value[2]

    def graph(self) -> GraphView:
        root = self.autograd.root
        return self.autograd.view(None if root is None else _name(root.dtype))

    # -- finding and naming what is watched ---------------------------------------------

    def settle(
        self,
        scope: Mapping[str, Any],
        names: Iterable[str] | None = None,
        frame: types.FrameType | None = None,
        loops: frozenset[str] = frozenset(),
    ) -> None:
        """After a statement: walk what ``names`` of ``scope`` hold (all of it when None) for
        tensors that require a gradient and optimizers, naming them as reached; ``frame``: the
        scope is that function's, not the cell's (its locals are all walked at its first
        statement while a parameter goes by ``self`` or worse). A tensor added since the last
        search (by this walk, a backward, an optimizer) has the whole namespace searched for
        its best name. ``loops``: the names the function's loops bind (names of last resort)."""
        local = frame is not None
        self._local_loops = loops
        if frame is not None:
            self.naming.frame = id(frame)
            self.naming.look(frame, lambda path, value: self._met(path, value, True))
        if names is None:
            roots = list(scope.items())
        else:
            roots = [(n, scope[n]) for n in dict.fromkeys(names) if n in scope]
        used = self.naming.roots()
        named = any(n in used for n, _ in roots)  # a name of a shown tensor rebound
        met: set[int] = set()
        if all(isinstance(v, torch.Tensor) for _, v in roots):  # ``loss = …``, ``p`` of a loop
            for n, v in roots:
                if not dull(v):
                    met.add(id(v))
                    self._met(n, v, local)
            whole = True
        else:

            def found(path: str, value: Any) -> None:
                met.add(id(value))
                self._met(path, value, local)

            whole = search(roots, found)
        if named and whole:  # what the walk did not meet is gone
            self._forget_stale({n for n, _ in roots}, met, local)
        self.rename(scope if local and scope is not self.space else None)

    def rename(self, scope: Mapping[str, Any] | None = None) -> None:
        """When a tensor was added or lost its name since the last search: each tensor's best
        name, from the namespace, ``scope`` (a function's locals) and, for a tensor no better
        name reaches, the functions running now."""
        if self._new:
            self._new = False
            self._best_names(scope)

    def _best_names(self, scope: Mapping[str, Any] | None) -> None:
        """Search the whole namespace (and ``scope``, a function's locals) for each tensor's
        best name. A tensor that lost its name (to another, or its name's root was rebound) and
        that nothing reaches any more, not even the locals of a function running now, is gone
        (a replaced model's weights); one that something else reaches is named by it."""
        best: dict[int, tuple[str, Rank, int]] = {}  # id -> its best name, rank, home frame
        here = self.naming.frame if scope is not None else None
        self._search(best, self.space, local=False)
        if scope is not None:
            self._search(best, scope, local=True)
        lost, self._lost = self._lost, set()
        names = self.naming.names
        poor = [i for i in names if i not in best or best[i][1][0] >= LOCAL_LOOP]
        if poor:  # a library's ``w`` and ``b``, between the user's callbacks
            for frame, scope_ in running(sys._getframe(1), self.space, INSIDE):
                source = parsed(frame.f_code.co_filename)
                self._local_loops = frozenset() if source is None else source.loop_variables
                self.naming.frame = id(frame)
                self._search(best, scope_, local=True)
        taken: set[str] = set()
        for i, (path, r, home) in sorted(best.items(), key=lambda item: item[1][1]):
            if path in taken or i not in names:
                continue  # a better-ranked tensor goes by that name (a global and a local)
            taken.add(path)
            name, now = names[i]
            # a better name, or another where this search was the whole truth (the namespace,
            # these locals): not a worse one where the name is another frame's (a library's)
            whole = now[0] in (NAMESPACE, LOOP_VARIABLE) or self.naming.homes.get(i) == here
            if path != name and (r < now or whole):
                self.naming.frame = home
                self._rename(i, path, r)
        for i in lost - best.keys():
            if i in names:
                self._drop(i)  # it reaches nothing any more

    def _forget_stale(self, roots: set[str], met: set[int], local: bool) -> None:
        """A tensor whose name starts at one of ``roots`` but which their walk no longer met
        is gone when not yet trained (``self.out.weight = self.embed.weight``: the old weight);
        a trained one is lost: named again by whatever reaches it, gone if nothing does."""
        tiers = HOMED if local else (NAMESPACE, LOOP_VARIABLE, OPTIMIZER)
        for i, (name, r) in list(self.naming.names.items()):
            if r[0] in tiers and i not in met and root(name) in roots:
                if i in self._trained:
                    self._lost.add(i)
                    self._new = True
                else:
                    self._drop(i)

    def _search(
        self, best: dict[int, tuple[str, Rank, int]], scope: Mapping[str, Any], local: bool
    ) -> None:
        loops = self.loop_variables
        groups = (
            [scope.items()]
            if local
            else [
                [(n, v) for n, v in scope.items() if n not in loops],
                [(n, v) for n, v in scope.items() if n in loops],
            ]
        )

        def better(i: int, path: str, r: Rank) -> None:
            if i not in best or r < best[i][1]:
                best[i] = (path, r, self.naming.frame)

        def found(path: str, value: Any) -> None:
            self._met(path, value, local, add_only=True)
            if isinstance(value, torch.Tensor) and id(value) in self._tensors:
                better(id(value), path, rank(self._tier(path, local), path))
            elif isinstance(value, torch.optim.Optimizer) and self._lost:
                for g, group in enumerate(value.param_groups):  # a layer the model let go
                    for k, p in enumerate(group["params"]):
                        if id(p) in self._lost:
                            held = f'{path}.param_groups[{g}]["params"][{k}]'
                            better(id(p), held, rank(OPTIMIZER, held))

        for roots in groups:
            search(roots, found)

    def _tier(self, path: str, local: bool) -> int:
        start = root(path)
        if local:
            return SELF if start == "self" else LOCAL_LOOP if start in self._local_loops else LOCAL
        return LOOP_VARIABLE if start in self.loop_variables else NAMESPACE

    def _met(self, path: str, value: Any, local: bool, add_only: bool = False) -> None:
        if isinstance(value, torch.optim.Optimizer):
            self.optimizer(value, path)
        elif isinstance(value, torch.Tensor):
            r = rank(self._tier(path, local), path)
            i = id(value)
            if i not in self._tensors:
                if value.requires_grad and value.is_leaf:
                    self._add(value, path, r)
            elif not value.requires_grad and i not in self._trained:
                self._drop(i)  # frozen before it was trained (a backbone, LoRA's base)
            elif not add_only and r < self.naming.names[i][1]:
                self._rename(i, path, r)

    def optimizer(self, optimizer: torch.optim.Optimizer, name: str | None = None) -> None:
        """An optimizer that runs (or is found): it and every parameter it holds (again when
        it holds more: a group added)."""
        held = sum(len(group["params"]) for group in optimizer.param_groups)
        known = self._seen.get(id(optimizer))
        if known == held:
            return
        self._seen[id(optimizer)] = held
        if known is None:
            self._optimizers.append(optimizer)
        label = name or f"optimizer{self._optimizers.index(optimizer) + 1}"
        for g, group in enumerate(optimizer.param_groups):
            for i, p in enumerate(group["params"]):
                if p.requires_grad:  # a frozen one it holds is not trained (until unfrozen)
                    path = f'{label}.param_groups[{g}]["params"][{i}]'
                    self._add(p, path, rank(OPTIMIZER, path))
        held_ids = (id(p) for group in optimizer.param_groups for p in group["params"])
        self.train(i for i in held_ids if i in self._tensors)

    def reached(self, roots: Sequence[torch.Tensor]) -> None:
        """The leaves a backward from ``roots`` writes ``.grad`` into, named if not yet."""
        if self._lazy:
            self._materialized()  # in their module's order, before the graph's
        found = leaves(roots)
        for leaf in found:
            self._add(leaf, "", MADE_UP_RANK)
        self.train(id(leaf) for leaf in found)

    def _add(self, tensor: torch.Tensor, name: str, r: Rank) -> None:
        """Watch ``tensor`` (if not yet) under ``name`` (a made-up one when empty or taken)."""
        i = id(tensor)
        if i in self._tensors:
            return
        if is_lazy(tensor):  # a lazy module's, not yet made:
            self._lazy.setdefault(i, (tensor, name, r))  # watched once its shape is known
            return
        self._tensors[i] = tensor
        self.contents.add(tensor)
        self._new = True
        name = self.naming.add(i, name, r)
        self.autograd.names.add({name: tensor})
        self._show()

    def _materialized(self) -> None:
        """A lazy parameter its module's first forward made (the same object, now a
        ``Parameter``) is watched from then on, as trained when an optimizer holds it."""
        for i, (tensor, name, r) in list(self._lazy.items()):
            if not is_lazy(tensor):
                del self._lazy[i]
                self._add(tensor, name, r)
                if any(held_by(o, tensor) for o in self._optimizers):
                    self.train([i])

    def _show(self) -> None:
        self.shows += 1
        trained = self._trained
        self.params = {
            self.naming.names[i][0]: t
            for i, t in self._tensors.items()
            if not trained or i in trained
        }

    def train(self, ids: Iterable[int]) -> None:
        """These tensors are trained (an optimizer holds them, a backward wrote their .grad,
        a step by hand moved them)."""
        new = {i for i in ids if i in self._tensors} - self._trained
        if new:
            self._trained |= new
            self._show()

    def _rename(self, i: int, name: str, r: Rank) -> None:
        """``name`` reaches tensor ``i`` now: it is its name; a tensor that held it before (a
        loop's variable since moved on, a replaced model's weight) is named again or gone."""
        other = self.naming.rename(i, name, r)
        if other is not None:
            self._lost.add(other)
        self._new |= other is not None or r[0] >= LOOP_VARIABLE  # the namespace may hold better
        self._show()
        holders = self.naming.holders
        self.autograd.names.add({n: self._tensors[k] for n, k in holders.items()})

    def _drop(self, i: int) -> None:
        self.naming.drop(i)
        del self._tensors[i]
        self.contents.drop(i)
        self._trained.discard(i)
        self._show()

    @property
    def moved(self) -> set[int]:
        """The ids of the tensors whose values changed since this was cleared."""
        return self.contents.moved

    def content(self, tensor: torch.Tensor) -> bytes:
        """The content last seen of a watched tensor (its bytes, or their digest)."""
        return self.contents.of(tensor)

    def name_of(self, tensor: torch.Tensor) -> str | None:
        hit = self.naming.names.get(id(tensor))
        return None if hit is None or self._tensors[id(tensor)] is not tensor else hit[0]

    # -- what a statement changed -----------------------------------------------------

    def check_values(self, scope: Mapping[str, Any], names: Iterable[str]) -> None:
        """A statement changed tensors through ``.data`` (no version tells): compare the
        contents of the watched tensors ``names`` reach (all of them when one reaches no
        tensor directly) with their last; a change counts as a move."""
        found = [scope.get(n) for n in names]
        direct = [v for v in found if isinstance(v, torch.Tensor) and id(v) in self._tensors]
        whole = direct and len(direct) == len(found)
        self.contents.check(direct if whole else list(self._tensors.values()))

    def marks(self, thorough: bool = True) -> dict[str, Any]:
        """A fingerprint of each store but the optimizer's state (whose changes the probe
        hears: a step, a load): equal before and after a statement unless it wrote it. The
        parameters' is the count of in-place changes of their values (a tensor newly watched
        changes no value: a backward meeting a parameter does not write it); ``thorough``: see
        ``Contents.update``."""
        if self._lazy:
            self._materialized()
        moves = self.contents.update(self._tensors, thorough)
        grads = tuple(
            (i, id(p.grad), p.grad._version) for i, p in self._tensors.items() if p.grad is not None
        )
        root = self.autograd.root
        loss = self.loss
        return {
            "params": moves,
            "graph": (id(root), self.autograd.freed),
            "grad": grads,
            "loss": None if loss is None else (id(loss), loss._version),
            "optimizer_state": None,
        }


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
