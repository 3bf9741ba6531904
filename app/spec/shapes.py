"""A spec's layers made and run (issue 28): each layer's input size inferred from what flows
in, the list run dry on PyTorch's meta device (shapes and parameters, no memory: a model past
the bounds is never allocated), each layer's ``init`` applied."""

from __future__ import annotations

import math
from typing import Any, TypedDict

import torch
from torch import nn

from app.spec.data import SpecError
from app.spec.layers import LAYERS, layer_name


class LayerJson(TypedDict):
    index: int
    type: str
    output_shape: list[int | None]
    params: int


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def make(i: int, layer: dict[str, Any], shape: tuple[int, ...], meta: bool = False) -> nn.Module:
    """Layer ``i`` for an input of per-row ``shape``: its input size inferred or checked.
    ``meta``: on PyTorch's meta device (shapes, no memory: a check never allocates a model
    past the bounds)."""
    kind = LAYERS[layer["type"]]
    kwargs = {**kind.defaults, **{k: v for k, v in layer.items() if k not in ("type", "init")}}
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    name = layer_name(i, layer)
    loc: tuple[str | int, ...] = ("model", i)
    if kind.dims is not None and len(shape) != kind.dims:
        want = {2: "(C, L)", 3: "(C, H, W)"}[kind.dims]
        raise SpecError(f"{name}: expects an input of shape {want}, gets {shape_text(shape)}", loc)
    if kind.inferred is not None:
        if kind.inferred == "normalized_shape":
            have: Any = (shape[-1],)
            given = kwargs.get("normalized_shape")
            if isinstance(given, int):
                given = (given,)
            if given is not None:
                have = tuple(shape[len(shape) - len(given) :])
                if tuple(given) != have:
                    raise SpecError(
                        f"{name}: expects shape {shape_text(tuple(given))}, "
                        f"gets {shape_text(shape)}",
                        loc,
                    )
            kwargs["normalized_shape"] = have if given is None else tuple(given)
        else:
            have = shape[-1] if kind.inferred == "in_features" else shape[0]
            if kind.inferred == "num_features" and len(shape) not in (1, 2) and kind.dims is None:
                raise SpecError(
                    f"{name}: expects an input of shape (C,) or (C, L), gets {shape_text(shape)}",
                    loc,
                )
            given = kwargs.get(kind.inferred)
            what = "features" if kind.inferred == "in_features" else "channels"
            if given is not None and given != have:
                raise SpecError(f"{name}: expects {given} {what}, gets {have}", loc)
            kwargs[kind.inferred] = have
    if meta and kind.inferred is not None:  # the layers with parameters
        kwargs["device"] = "meta"
    try:
        return kind.make(**kwargs)
    except (ValueError, TypeError, RuntimeError) as e:
        raise SpecError(f"{name}: {e}", loc) from e


MAX_VALUES = 2**20  # values per row flowing out of a layer (a check's bound on activations)


def run_dry(
    model: list[dict[str, Any]], features: int, max_params: int
) -> tuple[list[LayerJson], list[tuple[int, ...]]]:
    """Each layer made on the meta device in order and a batch of 2 run through it (eval
    mode): what flows out of it and its parameters, without memory; refused past the
    parameters' bound as soon as it is passed. Also each layer's input shape."""
    shape: tuple[int, ...] = (features,)
    shown: list[LayerJson] = []
    inputs: list[tuple[int, ...]] = []
    total = 0
    for i, layer in enumerate(model):
        module = make(i, layer, shape, meta=True).eval()
        total += sum(p.numel() for p in module.parameters())
        if total > max_params:
            raise SpecError(
                f"the model has {total} parameters by layer {i}: at most {max_params}",
                ("model",),
            )
        try:
            with torch.no_grad():
                out = module(torch.zeros((2, *shape), device="meta"))
        except (RuntimeError, ValueError, IndexError, NotImplementedError) as e:
            raise SpecError(
                f"{layer_name(i, layer)}: gets {shape_text(shape)}: {e}", ("model", i)
            ) from e
        if out.dim() < 2 or out.shape[0] != 2 or 0 in out.shape:
            raise SpecError(
                f"{layer_name(i, layer)}: makes {tuple(out.shape)} of a batch of 2 "
                "(the batch must stay)",
                ("model", i),
            )
        inputs.append(shape)
        shape = tuple(out.shape[1:])
        if math.prod(shape) > MAX_VALUES:
            raise SpecError(
                f"{layer_name(i, layer)}: makes {math.prod(shape)} values a row: "
                f"at most {MAX_VALUES}",
                ("model", i),
            )
        count = sum(p.numel() for p in module.parameters())
        shown.append(
            {"index": i, "type": layer["type"], "output_shape": [None, *shape], "params": count}
        )
    return shown, inputs


def initialise(i: int, layer: dict[str, Any], module: nn.Module, dry: bool = False) -> None:
    init = layer.get("init", "default")
    if init == "default":
        return
    params = dict(module.named_parameters(recurse=False))
    if init == "zeros":
        if not params:
            raise SpecError(f"{layer_name(i, layer)}: has no parameters to set", ("model", i))
        if not dry:
            with torch.no_grad():
                for param in params.values():
                    param.zero_()
        return
    for key, values in init.items():
        p = params.get(key)
        if p is None:
            raise SpecError(f"{layer_name(i, layer)}: has no {key}", ("model", i))
        given = torch.tensor(values, dtype=torch.float64)
        if given.shape != p.shape:
            raise SpecError(
                f"{layer_name(i, layer)}: init {key} is {shape_text(tuple(given.shape))}, "
                f"the {key} is {shape_text(tuple(p.shape))}",
                ("model", i),
            )
        if not dry:
            with torch.no_grad():
                p.copy_(given)
