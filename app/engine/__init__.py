"""The lab engine: live PyTorch, no HTTP."""

from .lab import Lab, LabState, LineError
from .program import Toggles

__all__ = ["Lab", "LabState", "LineError", "Toggles"]
