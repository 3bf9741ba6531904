"""What a namespace holds after a run, bit for bit: the tests compare a recorded run with a plain
one through it (a recording never changes a number)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

STATEFUL = (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler, torch.amp.GradScaler)


def bits(t: torch.Tensor) -> tuple[str, tuple[int, ...], bytes]:
    """A tensor as its dtype, shape and bytes (NaN equals NaN, -0.0 is not 0.0)."""
    flat = t.detach().contiguous().reshape(-1)
    return str(t.dtype), tuple(t.shape), bytes(flat.view(torch.uint8).numpy())


def plain(value: Any) -> Any:
    """``value`` with every tensor as its bits, containers walked (a state_dict)."""
    if isinstance(value, torch.Tensor):
        grad = value.grad if value.is_leaf else None
        return bits(value), None if grad is None else bits(grad)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, int | float | str | bool | type(None)):
        return value
    return type(value).__name__


def state(space: dict[str, Any]) -> dict[str, Any]:
    """Every module's parameters (with their ``.grad``) and buffers, every optimizer's,
    scheduler's and scaler's state, every tensor and number the namespace holds, and torch's
    random state."""
    found: dict[str, Any] = {"rng": bits(torch.get_rng_state())}
    for name, value in space.items():
        if name.startswith("_") or name in ("In", "Out"):
            continue
        if isinstance(value, nn.Module):
            found[name] = {
                **{n: plain(p) for n, p in value.named_parameters()},
                **{n: plain(b) for n, b in value.named_buffers()},
                "training": [m.training for m in value.modules()],
            }
        elif isinstance(value, STATEFUL):
            found[name] = plain(value.state_dict())
        elif isinstance(value, torch.Tensor | int | float | list | tuple | dict):
            found[name] = plain(value)
    return found
