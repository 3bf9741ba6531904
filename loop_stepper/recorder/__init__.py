"""The user's own training code, recorded statement by statement on their own model."""

from loop_stepper.recorder.record import MAX_MOMENTS, record
from loop_stepper.recorder.trace import Moment, StatementError, Trace

__all__ = ["MAX_MOMENTS", "Moment", "StatementError", "Trace", "record"]
