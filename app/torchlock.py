"""The one lock around torch's process-wide state, and a forward drawing from a session's own
generator under it.

torch.manual_seed, torch's default generator and the warnings filters are process-global:
building two seeded models, or running two lines that draw dropout masks or catch warnings, at
once in two threads would mix them, so all of these take this lock.
"""

from __future__ import annotations

import threading

import torch
from torch import nn

TORCH_LOCK = threading.RLock()


def with_rng(
    model: nn.Module, x: torch.Tensor, rng: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``model(x)`` drawing from ``rng``, a session's own generator state, swapped into torch's
    default generator (process-wide) for the forward and back out after it; and the state
    after the draws."""
    with TORCH_LOCK:
        saved = torch.get_rng_state()
        torch.set_rng_state(rng)
        try:
            out = model(x)
        finally:
            rng = torch.get_rng_state()
            torch.set_rng_state(saved)
    return out, rng
