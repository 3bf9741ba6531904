"""Parameters FSDP shards (``fully_shard``): each rank's optimizer holds its ``DTensor`` shard of
a parameter, and the forward and backward run on the whole parameter FSDP gathers for it (a
plain ``nn.Parameter`` of the shard's global shape, which no optimizer holds, by design).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

PLAIN = (torch.Tensor, nn.Parameter)


def is_shard(t: torch.Tensor) -> bool:
    """A tensor subclass spread over a device mesh (``DTensor``): this rank holds a part."""
    return type(t) not in PLAIN and hasattr(t, "device_mesh")


def local(t: torch.Tensor) -> torch.Tensor:
    """This rank's own part of ``t`` (a shard's local tensor; else ``t``): what the doctor reads
    of a shard is this rank's numbers, never a collective of its own (a sum or an ``item()`` of
    a ``DTensor`` all-reduces)."""
    return t.to_local() if is_shard(t) else t  # type: ignore[attr-defined]


def gathered(held: Iterable[torch.Tensor]) -> set[tuple[int, ...]]:
    """The shapes of the whole parameters FSDP gathers for the shards among ``held``."""
    return {tuple(p.shape) for p in held if is_shard(p)}


def gathers(leaf: torch.Tensor, shapes: set[tuple[int, ...]]) -> bool:
    """Whether ``leaf`` can be the whole parameter FSDP gathered for a shard of ``shapes``."""
    return not is_shard(leaf) and tuple(leaf.shape) in shapes
