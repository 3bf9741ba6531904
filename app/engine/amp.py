"""Mixed precision: forward and loss under ``torch.autocast("cpu", dtype=…)``, and for float16
``torch.amp.GradScaler("cpu")``, whose scale and skipped steps are a store (``scaler``).

The weights stay float32 (autocast runs eligible ops, e.g. ``addmm``, in the 16-bit type and
casts the weights for them); the scaler multiplies the loss before backward so small float16
gradients do not underflow to zero, unscales ``.grad`` before the step, skips the step when a
gradient overflowed (inf or NaN) and halves its scale then: the first steps are skipped while
the scale comes down from 2**16.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch.amp.grad_scaler import OptState

from app.engine.errors import LineError
from app.engine.views import AmpView, ScalerView

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class AmpSpec:
    """``dtype`` the autocast type; ``scaler`` (float16 only) whether a GradScaler goes with it."""

    dtype: Literal["bfloat16", "float16"]
    scaler: bool = True

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"amp must be bfloat16 or float16, not {self.dtype!r}")

    @property
    def uses_scaler(self) -> bool:
        return self.dtype == "float16" and self.scaler

    def describe(self) -> AmpView:
        return {"dtype": self.dtype, "scaler": self.uses_scaler}

    def to_json(self) -> AmpView:
        return {"dtype": self.dtype, "scaler": self.scaler}

    @classmethod
    def read(cls, data: AmpView | None) -> AmpSpec | None:
        return None if data is None else cls(data["dtype"], bool(data.get("scaler", True)))


def check(spec: AmpSpec | None, dtype: torch.dtype) -> None:
    """Autocast is for float32 models: a float64 model's ops are not eligible."""
    if spec is not None and dtype != torch.float32:
        name = str(dtype).removeprefix("torch.")
        raise ValueError(f"amp needs a float32 model: this one is {name}")


class Amp:
    """Autocast, and the GradScaler's ``scale``, ``step``, ``update`` and ``unscale_``."""

    def __init__(self, spec: AmpSpec | None) -> None:
        self.spec = spec
        self.scaler = torch.amp.GradScaler("cpu") if spec and spec.uses_scaler else None
        self.skipped = 0  # scaler.step calls that found inf/NaN and skipped optimizer.step

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.spec is None:
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=DTYPES[self.spec.dtype])

    def backward(self, loss: torch.Tensor, retain_graph: bool) -> None:
        """``loss.backward()``, or ``scaler.scale(loss).backward()``."""
        scaled = loss if self.scaler is None else self.scaler.scale(loss)
        scaled.backward(retain_graph=retain_graph)  # type: ignore[no-untyped-call]

    def step(self, line: str, optimizer: torch.optim.Optimizer) -> bool:
        """``optimizer.step()``, or ``scaler.step(optimizer)``; True when the scaler skipped it
        (a gradient was inf or NaN). PyTorch's refusals (a second step before update, no
        gradient to check) are LineErrors in its words, and leave the scaler as it was."""
        if self.scaler is None:
            optimizer.step()
            return False
        with self._unchanged_on_error(line, optimizer):
            self.scaler.step(optimizer)
        skipped = self._found_inf(optimizer) is True
        self.skipped += skipped
        return skipped

    def unscale(self, line: str, optimizer: torch.optim.Optimizer) -> None:
        """``scaler.unscale_(optimizer)`` (before clipping), when there is a scaler."""
        if self.scaler is not None:
            with self._unchanged_on_error(line, optimizer):
                self.scaler.unscale_(optimizer)

    def update(self, line: str, optimizer: torch.optim.Optimizer) -> None:
        """``scaler.update()``: halve the scale after a skipped step, double it after
        ``growth_interval`` (2000) good ones; the next iteration starts over."""
        if self.scaler is None:
            raise LineError(
                line,
                'scaler.update() needs a GradScaler: create the session with "amp": "float16"',
            )
        with self._unchanged_on_error(line, optimizer):
            self.scaler.update()

    @contextlib.contextmanager
    def _unchanged_on_error(self, line: str, optimizer: torch.optim.Optimizer) -> Iterator[None]:
        saved = self.capture(optimizer)
        grads = [
            None if p.grad is None else p.grad.clone()
            for g in optimizer.param_groups
            for p in g["params"]
        ]
        try:
            yield
        except (RuntimeError, AssertionError) as error:  # GradScaler asserts some of its rules
            self.restore(saved, optimizer)
            params = [p for g in optimizer.param_groups for p in g["params"]]
            for p, grad in zip(params, grads, strict=True):
                p.grad = grad
            raise LineError(line, str(error), torch_error=True) from error

    def _found_inf(self, optimizer: torch.optim.Optimizer) -> bool | None:
        """Whether this iteration's unscale found inf/NaN (None: no unscale since update)."""
        assert self.scaler is not None
        state = self.scaler._per_optimizer_states.get(id(optimizer))
        if not state or state["stage"] is OptState.READY:
            return None
        found = state["found_inf_per_device"]
        return bool(sum(v.item() for v in found.values())) if found else None

    # -- the store ----------------------------------------------------------------

    def describe(self, optimizer: torch.optim.Optimizer) -> ScalerView | None:
        if self.scaler is None:
            return None
        return {
            "scale": self.scaler.get_scale(),
            "growth_tracker": self._tracker(),
            "skipped_steps": self.skipped,
            "found_inf": self._found_inf(optimizer),
        }

    def _tracker(self) -> int:
        assert self.scaler is not None
        tracker = self.scaler._growth_tracker
        return self.scaler._init_growth_tracker if tracker is None else int(tracker.item())

    def capture(self, optimizer: torch.optim.Optimizer) -> dict[str, Any] | None:
        """Everything the scaler holds: scale and growth tracker (None until the first
        ``scale``, as PyTorch makes them lazily), this iteration's stage and what its unscale
        found, and the skipped steps so far."""
        scaler = self.scaler
        if scaler is None:
            return None
        state = scaler._per_optimizer_states.get(id(optimizer))
        stage = OptState.READY if not state else state["stage"]
        found = {} if not state else state["found_inf_per_device"]
        scale, tracker = scaler._scale, scaler._growth_tracker
        return {
            "init_scale": scaler._init_scale,
            "init_growth_tracker": scaler._init_growth_tracker,
            "scale": None if scale is None else scale.item(),
            "growth_tracker": None if tracker is None else int(tracker.item()),
            "stage": stage.value,
            "found_inf": [v.item() for v in found.values()],
            "skipped": self.skipped,
        }

    def restore(self, saved: dict[str, Any] | None, optimizer: torch.optim.Optimizer) -> None:
        scaler = self.scaler
        if scaler is None or saved is None:
            return
        scaler._init_scale = saved["init_scale"]
        scaler._init_growth_tracker = saved["init_growth_tracker"]
        scale, tracker = saved["scale"], saved["growth_tracker"]
        scaler._scale = None if scale is None else torch.full((), scale, dtype=torch.float32)
        scaler._growth_tracker = (
            None if tracker is None else torch.full((), tracker, dtype=torch.int32)
        )
        scaler._per_optimizer_states.clear()
        if saved["stage"] != OptState.READY.value or saved["found_inf"]:
            state = scaler._per_optimizer_states[id(optimizer)]  # a defaultdict
            state["stage"] = OptState(saved["stage"])
            state["found_inf_per_device"] = {
                torch.device("cpu"): torch.full((), v, dtype=torch.float32)
                for v in saved["found_inf"]
            }
        self.skipped = saved["skipped"]

    def state_dict(self) -> dict[str, Any]:
        """``scaler.state_dict()`` for a checkpoint (empty without a scaler)."""
        return {} if self.scaler is None else {"scaler": self.scaler.state_dict()}

    def load_state_dict(self, ckpt: dict[str, Any]) -> None:
        """A fresh scaler (scale 2**16 again), then what the checkpoint holds of it."""
        if self.scaler is None:
            return
        self.scaler = torch.amp.GradScaler("cpu")
        if "scaler" in ckpt:
            self.scaler.load_state_dict(ckpt["scaler"])
