"""The lab engine: live PyTorch, no HTTP."""

from app.engine.lab import Lab, LabState, LineError
from app.engine.program import Toggles

__all__ = ["Lab", "LabState", "LineError", "Toggles"]
