"""One running frame of the user's code, as ``record`` traces it line by line: the statement it
is in, so that a moment is taken when that statement completes (the frame's next statement
starts, or the frame returns), and a loop's next pass when the first statement of its body
starts again (``Source.loop_starts``). A frame of the recorded source and one of the user's
other code (an earlier cell's ``train``) are traced alike, each with its own file's statements.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Protocol

from loop_stepper.recorder.source import Source, Statement

TraceFunction = Callable[[types.FrameType, str, Any], Any]


class Runner(Protocol):
    """What a frame tells: a loop's pass started, a statement completed, an error of ours (the
    ``Recorder``); ``off`` once it stopped recording."""

    off: bool

    def failed(self, hook: str, error: Exception) -> None: ...

    def pass_started(self, code: types.CodeType, header: int) -> None: ...

    def completed(
        self, statement: Statement, frame: types.FrameType, file: str | None = None
    ) -> None: ...


class Frame:
    """One running frame of the user's code: the statement it is in and where it started.
    ``source`` is its file's statements, ``file`` None for the recorded source itself, else the
    file name of the other code it runs (an earlier cell's function)."""

    def __init__(
        self,
        recorder: Runner,
        frame: types.FrameType,
        source: Source,
        file: str | None = None,
    ) -> None:
        self.recorder, self.frame, self.source, self.file = recorder, frame, source, file
        self.current: Statement | None = None
        self.lasti = -1
        self.raised = False
        self.first: dict[int, int] = {}  # a statement's first offset (a loop jumps back there)

    def trace(self, frame: types.FrameType, event: str, arg: Any) -> TraceFunction | None:
        """The frame's local trace function. Fail-open: an error of ours stops the recording
        (``Runner.failed``) and the user's code runs on."""
        if self.recorder.off:
            return None
        try:
            if event == "line":
                self.line(frame)
            elif event == "return":
                self.done()
            elif event == "exception":
                self.raised = True
        except Exception as error:
            self.recorder.failed(event, error)
            return None
        return self.trace

    def line(self, frame: types.FrameType) -> None:
        statement = self.source.at_line.get(frame.f_lineno)
        if statement is None:
            return
        lasti = frame.f_lasti
        start = self.first.setdefault(statement.first, lasti)
        again = statement is self.current and lasti < self.lasti and lasti <= start
        self.lasti = lasti
        if statement is self.current and not again:
            return  # the same statement, on another of its lines
        self.done()
        self.current = statement
        header = self.source.loop_starts.get(statement.first)
        if header is not None and lasti == start:  # not an inner loop's next pass, a with's exit
            self.recorder.pass_started(frame.f_code, header)

    def done(self) -> None:
        """The current statement completed (unless it raised)."""
        statement, raised = self.current, self.raised
        self.current, self.raised = None, False
        if statement is not None and not raised and not statement.compound:
            self.recorder.completed(statement, self.frame, self.file)
