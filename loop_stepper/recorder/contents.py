"""What each watched tensor holds, to tell which a statement changed: its version (every
in-place change bumps one) and its content (its bytes up to 256 elements, else their digest),
read again when the version moved, or for a small tensor after every statement, or after a
statement that writes through ``.data`` (which bumps no version of the tensor's own: a
framework's or a hand-written step)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch

from loop_stepper.stores import tensors


def content(tensor: torch.Tensor) -> bytes:
    """The tensor's content, exactly (its bytes), or its digest past ``LARGEST_SHOWN``."""
    if tensor.numel() <= tensors.LARGEST_SHOWN:
        return tensors.fingerprint(tensor)
    return tensors.content_digest(tensor)


class Contents:
    def __init__(self) -> None:
        self.versions: dict[int, int] = {}
        self.contents: dict[int, bytes] = {}  # id -> content, as of its version above
        self.moves = 0  # in-place changes of the watched tensors' values so far
        self.moved: set[int] = set()  # the tensors whose values changed since it was cleared

    def add(self, tensor: torch.Tensor) -> None:
        i = id(tensor)
        self.versions[i] = tensor._version
        self.contents[i] = content(tensor)

    def drop(self, i: int) -> None:
        del self.versions[i], self.contents[i]

    def of(self, tensor: torch.Tensor) -> bytes:
        """The content last seen of a watched tensor."""
        return self.contents[id(tensor)]

    def check(self, changed: Iterable[torch.Tensor]) -> None:
        """These tensors may have changed through ``.data``: read them again."""
        for tensor in changed:
            i = id(tensor)
            tensors.forget(tensor)  # its kept summary is as old as its version
            now = content(tensor)
            if now != self.contents.get(i):
                self._moved(i, tensor._version, now)

    def update(self, watched: Mapping[int, torch.Tensor], thorough: bool = True) -> int:
        """Read what changed since the last look; the count of changes so far (the
        parameters' mark: a tensor newly watched changes no value). ``thorough``: a small
        tensor's bytes are compared whatever its version (after a statement that calls
        something: a framework may write through ``.data``), else its version alone."""
        for i, tensor in watched.items():
            version = tensor._version
            if thorough and tensor.numel() <= tensors.LARGEST_SHOWN:  # any route is seen
                now = tensors.fingerprint(tensor)
                if now != self.contents[i]:
                    self._moved(i, version, now)
            elif version != self.versions[i]:
                self._moved(i, version, content(tensor))
        return self.moves

    def _moved(self, i: int, version: int, now: bytes) -> None:
        self.versions[i], self.contents[i] = version, now
        self.moves += 1
        self.moved.add(i)
