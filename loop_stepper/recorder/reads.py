"""What the probe (``probe.py``) hears of what a loop reads and of its data-parallel job: a
parameter's ``.data`` (``data_read``), each batch a ``DataLoader`` gives (``batch``), the order
a ``DistributedSampler`` gives (``sampler_order``), each ``DistributedDataParallel`` forward and
whether its backward will all-reduce (``ddp_forward``: not inside ``no_sync()``).

Installed and removed with the probe's other hooks; each wrapper calls PyTorch's own with the
same arguments and returns its result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.utils.data.dataloader as loaders
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data.distributed import DistributedSampler

Patch = Callable[[Any, str, Callable[[Any], Any]], None]
Tell = Callable[..., None]


def install(
    patch: Patch, tell: Tell, observers: Callable[[], list[Any]], undo: list[Callable[[], None]]
) -> None:
    _data_property(tell, observers, undo)

    def batch(original: Any) -> Any:
        def wrapper(self: Any) -> Any:
            data = original(self)
            if observers():
                tell("batch", data)
            return data

        return wrapper

    patch(loaders._BaseDataLoaderIter, "__next__", batch)

    def order(original: Any) -> Any:
        def wrapper(self: Any) -> Any:
            if not observers():
                return original(self)
            indices = list(original(self))
            tell("sampler_order", self, indices)
            return iter(indices)

        return wrapper

    patch(DistributedSampler, "__iter__", order)

    def forward(original: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if observers():
                syncs = getattr(self, "require_backward_grad_sync", True)
                synced = bool(syncs) and torch.is_grad_enabled()
                tell("ddp_forward", self, synced)
            return original(self, *args, **kwargs)

        return wrapper

    patch(DistributedDataParallel, "forward", forward)


def _data_property(tell: Tell, observers: Callable[[], list[Any]], undo: list[Any]) -> None:
    """``Tensor.data`` as a property that tells ``data_read`` for a leaf that requires grad
    (PyTorch defines it on its C base class: the property on ``torch.Tensor`` shadows it and
    is deleted to undo)."""
    base = next(vars(c)["data"] for c in torch.Tensor.__mro__ if "data" in vars(c))

    def get(self: torch.Tensor) -> torch.Tensor:
        data: torch.Tensor = base.__get__(self, type(self))
        if self.requires_grad and self.is_leaf and observers():
            tell("data_read", self, data)
        return data

    def put(self: torch.Tensor, value: torch.Tensor) -> None:
        base.__set__(self, value)

    torch.Tensor.data = property(get, put, doc=base.__doc__)  # type: ignore[assignment]
    undo.append(lambda: delattr(torch.Tensor, "data"))
