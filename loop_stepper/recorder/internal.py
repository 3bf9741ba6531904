"""An internal error: a bug of this package's own, caught where it happened so that the user's
code runs on as it would without us (fail-open), and kept whole for a bug report: which part
failed (the recorder or the doctor) in which hook, where the user's code was, and the traceback.
It is never the user's error: a trace shows it apart (``Trace.internal_error``)."""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class InternalError:
    component: str  # "recorder" or "doctor"
    hook: str  # the hook that raised: "call", "line", "completed", "before_backward", …
    type: str  # the exception's class name
    message: str
    traceback: str  # formatted, for a bug report
    file: str | None = None  # where the user's code was: None for the recorded source itself
    line: int | None = None

    @classmethod
    def of(
        cls,
        component: str,
        hook: str,
        error: BaseException,
        file: str | None = None,
        line: int | None = None,
    ) -> InternalError:
        told = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return cls(component, hook, type(error).__name__, str(error), told, file, line)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def said(self, where: str) -> str:
        """One sentence for ``Trace.stopped`` and the doctor's report."""
        return (
            f"{self.component} stopped {where}by an internal error of loop_stepper in its "
            f"{self.hook} hook ({self}); your code ran on untouched. Please report it with "
            "its traceback (internal_error)"
        )
