"""A Lab's captured state as bytes, for the database: a JSON header and the tensors' raw bytes.

Exact (the raw bytes of every tensor and array, numbers as JSON writes them: repr, which
round-trips) and safe to read back (no pickle: nothing in a stored blob can run code). About a
tenth of ``torch.save``'s size and time for the many small tensors of a Lab.
"""

from __future__ import annotations

import json
import struct
from dataclasses import fields
from typing import Any

import numpy as np
import torch

from app.engine import LabState

_LENGTH = struct.Struct("<I")
_DTYPES = {
    str(t).removeprefix("torch."): t
    for t in (torch.float32, torch.float64, torch.float16, torch.int64, torch.bool, torch.uint8)
}


def encode(state: LabState) -> bytes:
    """``state`` as bytes; its history is left out (the timeline keeps the loss points)."""
    chunks: list[bytes] = []
    offset = 0

    def pack(value: Any) -> Any:
        nonlocal offset
        if isinstance(value, torch.Tensor):
            raw = value.detach().contiguous().numpy().tobytes()
            chunks.append(raw)
            offset += len(raw)
            dtype = str(value.dtype).removeprefix("torch.")
            return {"$t": [dtype, list(value.shape), offset - len(raw), len(raw)]}
        if isinstance(value, np.ndarray):
            kept = value
            # a batch order (0..149) needs 2 bytes a number, not 8: stored small, read back as was
            if value.dtype.kind in "iu" and value.size and value.min() >= 0 and value.max() < 2**16:
                kept = value.astype("<u2")
            raw = np.ascontiguousarray(kept).tobytes()
            chunks.append(raw)
            offset += len(raw)
            where = [kept.dtype.str, list(value.shape), offset - len(raw), len(raw)]
            return {"$a": [*where, value.dtype.str]}
        if isinstance(value, dict):
            return {"$d": [[pack(k), pack(v)] for k, v in value.items()]}
        if isinstance(value, tuple):
            return {"$u": [pack(v) for v in value]}
        if isinstance(value, list):
            return [pack(v) for v in value]
        if value is None or isinstance(value, bool | int | float | str):
            return value
        raise TypeError(f"cannot store a {type(value).__name__} in a keyframe")

    header = {f.name: pack(getattr(state, f.name)) for f in fields(state) if f.name != "history"}
    head = json.dumps(header, separators=(",", ":")).encode()
    return _LENGTH.pack(len(head)) + head + b"".join(chunks)


def decode(blob: bytes) -> LabState:
    (length,) = _LENGTH.unpack_from(blob)
    data = memoryview(blob)[_LENGTH.size + length :]

    def unpack(value: Any) -> Any:
        if isinstance(value, list):
            return [unpack(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "$t" in value:
            dtype, shape, start, size = value["$t"]
            t = torch.frombuffer(bytearray(data[start : start + size]), dtype=_DTYPES[dtype])
            return t.reshape(shape)
        if "$a" in value:
            dtype, shape, start, size, was = value["$a"]
            array = np.frombuffer(data[start : start + size], dtype=dtype).reshape(shape)
            return array.astype(was)
        if "$d" in value:
            return {unpack(k): unpack(v) for k, v in value["$d"]}
        if "$u" in value:
            return tuple(unpack(v) for v in value["$u"])
        raise ValueError("not a keyframe")

    header = json.loads(bytes(blob[_LENGTH.size : _LENGTH.size + length]))
    return LabState(**{k: unpack(v) for k, v in header.items()})
