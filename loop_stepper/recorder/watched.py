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

import itertools
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch.nn.parameter import is_lazy

from loop_stepper.recorder.files import INSIDE
from loop_stepper.recorder.names import (
    GONE,
    LOCAL,
    LOOP_VARIABLE,
    MADE_UP,
    NAMESPACE,
    OPTIMIZER,
    SELF,
    Rank,
    dull,
    held_by,
    leaves,
    rank,
    search,
)
from loop_stepper.stores import tensors
from loop_stepper.stores.graph import Graph
from loop_stepper.stores.views import GraphView

STORES = ("params", "graph", "grad", "loss", "optimizer_state")
_STACK = 64  # frames whose locals a lost tensor is looked for in, at most
_MADE_UP: Rank = (MADE_UP, False, 0, 0)


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
        self.moved: set[int] = set()  # the tensors whose values the statement changed
        self._tensors: dict[int, torch.Tensor] = {}  # id -> tensor (held: ``params`` holds it)
        self._names: dict[int, tuple[str, Rank]] = {}  # id -> its name and how good it is
        self._holders: dict[str, int] = {}  # name -> id
        self._used: set[str] | None = None  # the names the names start from (None: to make)
        self._made_up = itertools.count()
        self._new = False  # a tensor was added since the last search of the namespace
        self._lost: set[int] = set()  # ids of tensors that lost their name: named again or gone
        self._lazy: dict[int, tuple[torch.Tensor, str, Rank]] = {}  # lazy parameters, not made
        self._looked: set[int] = set()  # ids of the frames whose locals were all walked
        self._barren: set[types.CodeType] = set()  # code whose locals named nothing better
        self._frames: dict[int, int] = {}  # a tensor named by a function's local -> its frame
        self._frame = 0  # the id of the frame whose locals are being walked
        self._versions: dict[int, int] = {}
        self._contents: dict[int, bytes] = {}  # id -> content, as of its version above
        self.moves = 0  # in-place changes of the parameters' values so far
        self._optimizers: list[torch.optim.Optimizer] = []
        self._seen: set[int] = set()  # ids of the optimizers met so far
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
    ) -> None:
        """After a statement: walk what ``names`` of ``scope`` hold (all of it when None) for
        tensors that require a gradient and optimizers, naming them as reached; ``frame``: the
        scope is that function's, not the cell's (its locals are all walked at its first
        statement while a parameter goes by ``self`` or worse). A tensor added since the last
        search (by this walk, a backward, an optimizer) has the whole namespace searched for
        its best name."""
        local = frame is not None
        if frame is not None:
            self._frame = id(frame)
            self._first_look(frame)
        if names is None:
            roots = list(scope.items())
        else:
            roots = [(n, scope[n]) for n in dict.fromkeys(names) if n in scope]
        if self._used is None:
            self._used = {n.partition(".")[0].partition("[")[0] for n in self._holders}
        named = any(n in self._used for n, _ in roots)  # a name of a shown tensor rebound
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
        if self._new:
            self._new = False
            self._best_names(scope if local and scope is not self.space else None)

    def _best_names(self, scope: Mapping[str, Any] | None) -> None:
        """Search the whole namespace (and ``scope``, a function's locals) for each tensor's
        best name. A tensor that lost its name (to another, or its name's root was rebound) and
        that nothing reaches any more, not even the locals of a function running now, is gone
        (a replaced model's weights); one that something else reaches is named by it."""
        best: dict[int, tuple[str, Rank]] = {}
        self._search(best, self.space, local=False)
        if scope is not None:
            self._search(best, scope, local=True)
        lost, self._lost = self._lost, set()
        if lost - best.keys():
            self._search_stack(best)
        taken: set[str] = set()
        for i, (path, r) in sorted(best.items(), key=lambda item: item[1][1]):
            if path in taken or i not in self._names:
                continue  # a better-ranked tensor goes by that name (a global and a local)
            taken.add(path)
            if path != self._names[i][0]:
                self._rename(i, path, r)
        for i in lost - best.keys():
            if i in self._names:
                self._drop(i)  # it reaches nothing any more

    def _search_stack(self, best: dict[int, tuple[str, Rank]]) -> None:
        """The locals of the functions running now (a library's ``w`` and ``b`` its loop
        trains, between the user's callbacks), innermost first."""
        frame: types.FrameType | None = sys._getframe(2)
        for _ in range(_STACK):
            if frame is None or frame.f_locals is self.space:
                return  # the cell's own namespace, searched already
            if not frame.f_code.co_filename.startswith(INSIDE):  # not ours, nor torch's
                self._search(best, frame.f_locals, local=True)
            frame = frame.f_back

    def _forget_stale(self, roots: set[str], met: set[int], local: bool) -> None:
        """A tensor whose name starts at one of ``roots`` but which their walk no longer met
        is gone when not yet trained (``self.out.weight = self.embed.weight``: the old weight);
        a trained one is lost: named again by whatever reaches it, gone if nothing does."""
        tiers = (LOCAL, SELF) if local else (NAMESPACE, LOOP_VARIABLE)
        for i, (name, r) in list(self._names.items()):
            root = name.partition(".")[0].partition("[")[0]
            if r[0] in tiers and i not in met and root in roots:
                if i in self._trained:
                    self._lost.add(i)
                    self._new = True
                else:
                    self._drop(i)

    def _first_look(self, frame: types.FrameType) -> None:
        """Walk all of a function's locals at its first statement while a parameter goes by a
        poor name (``self.a``, a made-up one), unless its code's locals named nothing better
        before (``forward``'s ``self``, at each call)."""
        key = id(frame)
        if key in self._looked or frame.f_code in self._barren:
            return
        if len(self._looked) > 256:
            self._looked.clear()
        self._looked.add(key)
        live: set[int] = set()
        at: types.FrameType | None = frame
        while at is not None:
            live.add(id(at))
            at = at.f_back
        for i, home in list(self._frames.items()):
            if home not in live:  # named by the locals of a function that has returned
                del self._frames[i]
                if i in self._names:
                    name, r = self._names[i]
                    self._names[i] = (name, (GONE, *r[1:]))
        if all(r[0] < SELF for _, r in self._names.values()):
            return
        before = dict(self._names)
        search(frame.f_locals.items(), lambda path, value: self._met(path, value, True))
        if self._names == before:
            self._barren.add(frame.f_code)

    def _search(
        self, best: dict[int, tuple[str, Rank]], scope: Mapping[str, Any], local: bool
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
                best[i] = (path, r)

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
        root = path.partition(".")[0].partition("[")[0]
        if local:
            return SELF if root == "self" else LOCAL
        return LOOP_VARIABLE if root in self.loop_variables else NAMESPACE

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
            elif not add_only and r < self._names[i][1]:
                self._rename(i, path, r)

    def optimizer(self, optimizer: torch.optim.Optimizer, name: str | None = None) -> None:
        """An optimizer that runs (or is found): it and every parameter it holds."""
        if id(optimizer) in self._seen:
            return
        self._seen.add(id(optimizer))
        self._optimizers.append(optimizer)
        label = name or f"optimizer{len(self._optimizers)}"
        for g, group in enumerate(optimizer.param_groups):
            for i, p in enumerate(group["params"]):
                path = f'{label}.param_groups[{g}]["params"][{i}]'
                self._add(p, path, rank(OPTIMIZER, path))
        self.train(id(p) for group in optimizer.param_groups for p in group["params"])

    def reached(self, roots: Sequence[torch.Tensor]) -> None:
        """The leaves a backward from ``roots`` writes ``.grad`` into, named if not yet."""
        found = leaves(roots)
        for leaf in found:
            self._add(leaf, "", _MADE_UP)
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
        self._versions[i] = tensor._version
        self._contents[i] = tensors.fingerprint(tensor)
        self._new = True
        if not name or name in self._holders:
            name, r = self._made_up_name(), _MADE_UP
        self._names[i] = (name, r)
        self._holders[name] = i
        self._used = None
        self._home(i, r)
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
        trained = self._trained
        self.params = {
            self._names[i][0]: t for i, t in self._tensors.items() if not trained or i in trained
        }

    def train(self, ids: Iterable[int]) -> None:
        """These tensors are trained (an optimizer holds them, a backward wrote their .grad,
        a step by hand moved them)."""
        new = {i for i in ids if i in self._tensors} - self._trained
        if new:
            self._trained |= new
            self._show()

    def _home(self, i: int, r: Rank) -> None:
        if r[0] in (LOCAL, SELF):
            self._frames[i] = self._frame
        else:
            self._frames.pop(i, None)

    def _made_up_name(self) -> str:
        while True:
            name = f"leaf{next(self._made_up)}"
            if name not in self._holders:
                return name

    def _rename(self, i: int, name: str, r: Rank) -> None:
        """``name`` reaches tensor ``i`` now: it is its name; a tensor that held it before (a
        loop's variable since moved on) has a made-up one."""
        other = self._holders.get(name)
        if other is not None and other != i:  # replaced (a tied weight's, a replaced model's):
            self._names[other] = (self._made_up_name(), _MADE_UP)  # named again, or gone
            self._holders[self._names[other][0]] = other
            self._lost.add(other)
            self._new = True
        del self._holders[self._names[i][0]]
        self._names[i] = (name, r)
        self._home(i, r)
        self._new |= r[0] >= LOOP_VARIABLE  # a poor name: the namespace may hold a better
        self._holders[name] = i
        self._used = None
        self._show()
        self.autograd.names.add({n: self._tensors[k] for n, k in self._holders.items()})

    def _drop(self, i: int) -> None:
        name = self._names.pop(i)[0]
        del self._holders[name], self._tensors[i], self._versions[i], self._contents[i]
        self._used = None
        self._trained.discard(i)
        self._frames.pop(i, None)
        self._show()

    def content(self, tensor: torch.Tensor) -> bytes:
        """The content last seen of a watched tensor (its bytes, or their digest)."""
        return self._contents[id(tensor)]

    def name_of(self, tensor: torch.Tensor) -> str | None:
        hit = self._names.get(id(tensor))
        return None if hit is None or self._tensors[id(tensor)] is not tensor else hit[0]

    # -- what a statement changed -----------------------------------------------------

    def check_values(self, scope: Mapping[str, Any], names: Iterable[str]) -> None:
        """A statement changed tensors through ``.data`` (no version tells): compare the
        contents of the watched tensors ``names`` reach (all of them when one reaches no
        tensor directly) with their last; a change counts as a move."""
        found = [scope.get(n) for n in names]
        direct = [v for v in found if isinstance(v, torch.Tensor) and id(v) in self._tensors]
        for tensor in direct if direct and len(direct) == len(found) else self._tensors.values():
            i = id(tensor)
            tensors.forget(tensor)  # its kept summary is as old as its version
            content = tensors.fingerprint(tensor)
            if content != self._contents.get(i):
                self.moves += 1
                self.moved.add(i)
                self._contents[i] = content

    def marks(self) -> dict[str, Any]:
        """A fingerprint of each store: equal before and after a statement unless it wrote it.
        The parameters' is the count of in-place changes of their values (a tensor newly
        watched changes no value: a backward meeting a parameter does not write it)."""
        if self._lazy:
            self._materialized()
        for i, tensor in self._tensors.items():
            version = tensor._version
            if tensor.numel() <= tensors.LARGEST_SHOWN:  # its bytes: any route (a framework
                content = tensors.fingerprint(tensor)  # writing through .data) is seen
                if content != self._contents[i]:
                    self._versions[i], self._contents[i] = version, content
                    self.moves += 1
                    self.moved.add(i)
            elif version != self._versions[i]:
                self._versions[i] = version
                self._contents[i] = tensors.fingerprint(tensor)
                self.moves += 1
                self.moved.add(i)
        grads = tuple(
            (i, id(p.grad), p.grad._version) for i, p in self._tensors.items() if p.grad is not None
        )
        state = tuple(
            (id(p), _state_mark(s)) for o in self._optimizers for p, s in o.state.items() if s
        )
        root = self.autograd.root
        loss = self.loss
        return {
            "params": self.moves,
            "graph": (id(root), self.autograd.freed),
            "grad": grads,
            "loss": None if loss is None else (id(loss), loss._version),
            "optimizer_state": state,
        }


def _state_mark(state: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(
        (k, (id(v), v._version) if isinstance(v, torch.Tensor) else v) for k, v in state.items()
    )


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
