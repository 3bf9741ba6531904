"""The stores as the page draws them, from what a Lab and a recorded moment both hold.

One function, ``view``, makes the parameters, their ``.grad`` (None is not zeros), the optimizer
state, the loss and the graph of a Session (``answer.py``, a Lab) and of a notebook's recorded
moment (``loop_stepper/recorder/``) alike, from the small ``Stores`` protocol; ``page`` reads a page
of one of those tensors' exact elements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypedDict

import numpy as np
import torch

from loop_stepper.stores import tensors
from loop_stepper.stores.tensors import BadRange, UnknownTensor
from loop_stepper.stores.views import GraphView, ParamStateView, ParamView, TensorPageView


class Stores(Protocol):
    """What the stores are drawn from: the parameters by the names the user reaches them by,
    the optimizers holding them, the loss's value and the newest graph."""

    @property
    def named(self) -> Mapping[str, torch.Tensor]: ...

    @property
    def optimizers(self) -> Sequence[torch.optim.Optimizer]: ...

    @property
    def loss_value(self) -> float | None: ...

    def graph(self) -> GraphView: ...


class StoresView(TypedDict):
    params: list[ParamView]
    optimizer_state: list[ParamStateView]
    loss: float | None
    graph: GraphView


def held(optimizers: Sequence[torch.optim.Optimizer], param: torch.Tensor) -> dict[str, Any]:
    """What the first of ``optimizers`` holding state for ``param`` holds ({} before a step)."""
    found: dict[str, Any] = next((o.state[param] for o in optimizers if param in o.state), {})
    return found


def state_of(
    optimizers: Sequence[torch.optim.Optimizer], named: Mapping[str, torch.Tensor]
) -> list[ParamStateView]:
    """Per parameter, what PyTorch's ``optimizer.state`` holds for it (empty until a step):
    the first of ``optimizers`` that holds any state for it."""
    rows: list[ParamStateView] = []
    for name, p in named.items():
        state = {
            key: tensors.shown(v) if isinstance(v, torch.Tensor) else v
            for key, v in held(optimizers, p).items()
        }
        rows.append({"name": name, "state": state})
    return rows


def params(named: Mapping[str, torch.Tensor]) -> list[ParamView]:
    """Each parameter's value and ``.grad`` as the Session sends them (a summary past 256
    elements; ``grad`` None while ``.grad`` is None, zeros when it holds zeros)."""
    return [
        param(n, p, tensors.shown(p), None if p.grad is None else tensors.shown(p.grad))
        for n, p in named.items()
    ]


def param(name: str, p: torch.Tensor, value: Any, grad: Any) -> ParamView:
    """One parameter's row, given its value and ``.grad`` as drawn (``tensors.shown``)."""
    return {
        "name": name,
        "shape": list(p.shape),
        "dtype": str(p.dtype).removeprefix("torch."),
        "value": value,
        "grad": grad,
    }


def view(stores: Stores) -> StoresView:
    """The four stores and the optimizer's state, as plain values."""
    return {
        "params": params(stores.named),
        "optimizer_state": state_of(stores.optimizers, stores.named),
        "loss": stores.loss_value,
        "graph": stores.graph(),
    }


def page(
    stores: Stores, store: str, name: str, key: str | None, start: int, stop: int | None
) -> TensorPageView:
    """Elements ``start`` to ``stop`` (excluded) of one tensor flattened row-major, exactly as
    ``Tensor.tolist`` gives them (``stop`` absent: as many as a page holds from ``start``).
    ``store``: ``params`` (a parameter), ``grad`` (its ``.grad``: ``values`` None while that
    is None) or ``state`` (``optimizer.state[param][key]``). Reads only."""
    param = stores.named.get(name)
    if param is None:
        raise UnknownTensor(f"no parameter named {name!r} (the Session's params name them)")
    if (key is not None) != (store == "state"):
        raise BadRange(["query", "key"], "key names an optimizer state tensor: store=state only")
    tensor: torch.Tensor | None = param.detach()
    if store == "grad":
        tensor = param.grad
    elif store == "state":
        kept = held(stores.optimizers, param).get(key or "")
        if not isinstance(kept, torch.Tensor):
            raise UnknownTensor(f"no optimizer state {key!r} for {name!r} (none before a step)")
        tensor = kept
    shape = list(param.shape if tensor is None else tensor.shape)
    numel = int(np.prod(shape))
    first, last = tensors.bounds(numel, start, stop)
    values = None if tensor is None else tensor.detach().reshape(-1)[first:last].tolist()
    return {
        "store": store,
        "name": name,
        "key": key,
        "shape": shape,
        "dtype": str((param if tensor is None else tensor).dtype).removeprefix("torch."),
        "numel": numel,
        "start": first,
        "stop": last,
        "values": values,
    }
