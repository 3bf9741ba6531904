"""The error a line raises when it cannot run."""

from __future__ import annotations


class LineError(Exception):
    """A line that cannot run in the current state (the HTTP layer answers 409).

    ``torch_error`` is True when the message is PyTorch's own, raised by PyTorch.
    """

    def __init__(self, line: str, message: str, torch_error: bool = False) -> None:
        super().__init__(message)
        self.line, self.message, self.torch_error = line, message, torch_error
