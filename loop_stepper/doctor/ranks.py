"""One rank of a data-parallel job (``torchrun``: ``WORLD_SIZE`` above 1), as it runs:

- the bugs one rank's numbers show: a shuffling ``DistributedSampler`` giving the same order in
  two epochs (``sampler_without_set_epoch``), a step reading gradients whose last forward ran
  inside ``no_sync()`` (``step_after_no_sync``), one backward a step of a loss divided by the
  world size through DDP (``loss_divided_by_world_size``);
- the facts the job compares across its ranks when they end (``job.py``), cut at each backward
  (DDP's backwards are the job's lockstep): the statements each rank ran since the last one (a
  step, a clear, a load, a mode change, with their lines) and, at the sampled ones, a
  fingerprint of each parameter; the fingerprints of the first batches it read.

Nothing is sent while the job runs: each rank's facts go into its report file at its end.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _NormBase

from loop_stepper.doctor.chart import Chart
from loop_stepper.doctor.evals import in_eval
from loop_stepper.doctor.shards import is_shard
from loop_stepper.doctor.where import Place

BATCHES = 4  # the first batches fingerprinted
RECORDS = 64  # the backwards whose statements are kept (then one in EVERY)
EVERY = 128
SAMPLED = 4096  # the elements of a tensor its fingerprint reads one by one


def world() -> int:
    """The job's ranks: torchrun's ``WORLD_SIZE``, else the process group's, else 1."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return int(torch.distributed.get_world_size())
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def rank() -> int:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return int(torch.distributed.get_rank())
    return int(os.environ.get("RANK", "0") or 0)


def fingerprint(t: torch.Tensor) -> str:
    """Eight bytes of a hash of a tensor's bits at up to ``SAMPLED`` evenly strided elements and
    of the sum of all of them (a float tensor's): what makes two ranks' copies of a parameter
    differ (a step, a load) shows in both, and a whole hash of a large tensor costs a step."""
    flat = t.detach().reshape(-1)
    picked = flat[:: max(1, flat.numel() // SAMPLED)].contiguous().cpu()
    whole = repr(float(flat.sum(dtype=torch.float64))) if flat.is_floating_point() else ""
    bits = picked.view(torch.uint8).numpy().tobytes() + whole.encode()
    return hashlib.blake2b(bits, digest_size=8).hexdigest()


class Ranks:
    always = True  # told at every iteration (chart.AWAKE): the job's lockstep is its backwards

    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.world = world()
        self.orders: dict[int, tuple[int, int, list[int]]] = {}  # sampler: epochs, order, first
        # the last DDP forward: synced, and where when not
        self.forward: tuple[bool, Place | None] | None = None
        self.ddp_since_backward = False
        self.divided: Place | None = None  # a backward of a loss / world size since the step
        self.backwards_since_step = 0
        self.events: list[list[Any]] = []  # the statements since the last backward
        self.records: list[dict[str, Any]] = []
        self.backwards = 0
        self.batches: list[list[Any]] = []
        self.names: dict[int, str] | None = None
        self.ddp = False  # a DistributedDataParallel forward was heard
        # norm layers whose running statistics each rank keeps (``broadcast_buffers=False``,
        # not SyncBatchNorm), known at the first DDP forward; the saves and evaluations of them
        self.unsynced: list[tuple[str, nn.Module]] | None = None
        self.uses: list[list[Any]] = []
        self.modes: list[str] | None = None  # the parts in eval mode at the last DDP forward

    def close(self) -> None:
        self._cut()  # what ran after the last backward, and the parameters at the end

    def facts(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "batches": self.batches,
            "world": self.world,
            "ddp": self.ddp,
            "uses": self.uses,
        }

    # -- what this rank's numbers show -----------------------------------------------------

    def sampler_order(self, sampler: Any, indices: list[int]) -> None:
        if not getattr(sampler, "shuffle", False) or len(indices) < 2:
            return
        order = hash(tuple(indices))
        epochs, before, _ = self.orders.get(id(sampler), (0, None, []))
        if before == order:
            evidence = {"epoch": epochs, "before": epochs - 1, "first": indices[:5]}
            self.doctor.name("sampler_without_set_epoch", self.doctor.place(), evidence)
        self.orders[id(sampler)] = (epochs + 1, order, indices[:5])

    def ddp_forward(self, module: nn.Module, synced: bool) -> None:
        self.ddp = True
        if self.unsynced is None:
            self.unsynced = _unsynced(module)
        if torch.is_grad_enabled():
            if _kept(self.backwards):
                self.modes = in_eval(module)
            self.forward = (synced, None if synced else self.doctor.place())
            self.ddp_since_backward = True

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        self._cut()
        self.backwards_since_step += 1
        doctor = self.doctor
        if self.ddp_since_backward and roots and _divided_by(roots[0], self.world):
            self.divided = doctor.place() if doctor.dormant else doctor.backward_at
        self.ddp_since_backward = False
        self._event("backward", None if doctor.dormant else doctor.backward_at)

    def before_step(self, optimizer: torch.optim.Optimizer) -> None:
        doctor = self.doctor
        if self.forward is not None and self.forward[1] is not None:
            evidence = {"forward": self.forward[1][1]}
            doctor.name("step_after_no_sync", doctor.place(), evidence)
        if self.divided is not None and self.backwards_since_step == 1:
            doctor.name("loss_divided_by_world_size", self.divided, {"divisor": self.world})
        self.forward, self.divided, self.backwards_since_step = None, None, 0
        self._event("step")

    # -- the facts compared across ranks ---------------------------------------------------

    def zero_grad(self, owner: Any, set_to_none: bool) -> None:
        self._event("zero_grad")

    def state_loaded(self, owner: Any) -> None:
        self._event("load_state_dict")

    def mode_set(self, module: nn.Module, training: bool) -> None:
        self._event("train" if training else "eval")
        if not training:
            self._use("evaluation")

    def checkpoint_saved(self, saved: Any) -> None:
        self._use("save")

    def batch(self, data: Any) -> None:
        if len(self.batches) >= BATCHES:
            return
        first = _first_tensor(data)
        if first is not None:
            file, line = self.doctor.place()
            self.batches.append([fingerprint(first), file, line])

    def _event(self, what: str, at: Place | None = None) -> None:
        """A statement some ranks may run and others not, kept while this record is."""
        if len(self.events) >= 64 or not _kept(self.backwards):
            return
        file, line = at or self.doctor.place()
        event = [what, file, line]  # once a statement (eval() tells each sub-module's)
        if not self.events or self.events[-1] != event:
            self.events.append(event)

    def _use(self, what: str) -> None:
        """A save or an evaluation of running statistics the ranks keep apart."""
        if not self.unsynced or len(self.uses) >= 16:
            return
        file, line = self.doctor.place()
        if not self.uses or self.uses[-1][1:4] != [file, line, self.backwards]:
            self.uses.append([what, file, line, self.backwards, self._stats()])

    def _stats(self) -> list[Any]:
        """A fingerprint of the unsynced running statistics; the first layer's name and its
        first running mean."""
        assert self.unsynced
        prints = [fingerprint(b) for _, m in self.unsynced for b in m.buffers(recurse=False)]
        name, first = self.unsynced[0]
        whole = hashlib.blake2b("".join(prints).encode(), digest_size=8).hexdigest()
        return [whole, f"{name} ({type(first).__name__})", _first(first.get_buffer("running_mean"))]

    def _cut(self) -> None:
        """Close the record of the statements since the last backward; the parameters'
        fingerprints at the sampled ones."""
        n = self.backwards
        self.backwards += 1
        modes, self.modes = self.modes, None
        if not _kept(n):
            self.events = []
            return
        record: dict[str, Any] = {"backward": n, "events": self.events}
        if n < 4 or n % EVERY == 0:
            record["params"] = self._params()
        if modes is not None:
            record["modes"] = modes
        if self.unsynced:
            record["stats"] = self._stats()
        self.records.append(record)
        self.events = []

    def _params(self) -> dict[str, list[Any]]:
        held = [p for o in self.doctor.optimizers.values() for p in o.tensors()]
        if not held or any(map(is_shard, held)):  # FSDP: each rank holds shards of its own
            return {}
        if self.names is None:
            self.names = dict(zip(map(id, held), self.doctor.names(held), strict=True))
        return {
            self.names.get(id(p), str(i)): [fingerprint(p), _first(p)] for i, p in enumerate(held)
        }


def _kept(n: int) -> bool:
    """Whether the record cut at the ``n``-th backward is kept."""
    return n < RECORDS or n % EVERY == 0


def _unsynced(module: nn.Module) -> list[tuple[str, nn.Module]]:
    """The norm layers of a DDP model whose running statistics each rank keeps its own: the
    buffers not broadcast from rank 0 at each forward, the layers not SyncBatchNorm."""
    # forward_sync_buffers: torch 2.13's name of broadcast_buffers
    if getattr(module, "forward_sync_buffers", getattr(module, "broadcast_buffers", True)):
        return []
    inner = getattr(module, "module", module)
    return [
        (name, m)
        for name, m in inner.named_modules()
        if isinstance(m, _NormBase)
        and not isinstance(m, nn.SyncBatchNorm)
        and isinstance(m.running_mean, torch.Tensor)
    ]


def _first(p: torch.Tensor) -> float | None:
    return round(float(p.detach().reshape(-1)[0]), 6) if p.numel() else None


def _divided_by(loss: torch.Tensor, world: int) -> bool:
    """Whether the loss's last nodes, divisions or products by one number (``accelerate``
    divides by its ``gradient_accumulation_steps``, 1 by default), scale it by 1/``world``.
    With two ranks, a product by 0.5 or a halved sum (``(loss_a + loss_b) / 2``) is as often a
    coefficient or a mean of two terms: not counted (say nothing rather than guess)."""
    fn, factor = loss.grad_fn, 1.0
    for _ in range(4):
        name = type(fn).__name__
        other = getattr(fn, "_saved_other", None)
        if fn is None or not isinstance(other, torch.Tensor) or other.numel() != 1:
            return False
        value, below = float(other), fn.next_functions[0][0]
        if name.startswith("DivBackward") and value:
            factor /= value
        elif name.startswith("MulBackward") and world > 2:
            factor *= value
        elif not (name.startswith("MulBackward") and value == 1):
            return False
        if abs(factor * world - 1) < 1e-9:
            return world > 2 or not type(below).__name__.startswith("AddBackward")
        fn = below
    return False


def _first_tensor(data: Any) -> torch.Tensor | None:
    if isinstance(data, torch.Tensor):
        return data
    if isinstance(data, list | tuple):
        return next((t for t in data if isinstance(t, torch.Tensor)), None)
    if isinstance(data, dict):
        return next((t for t in data.values() if isinstance(t, torch.Tensor)), None)
    return None
