"""One running frame of the user's code, as ``record`` traces it line by line: the statement it
is in, so that a moment is taken when that statement completes (the frame's next statement
starts, or the frame returns), and a loop's next pass when the first statement of its body
starts again (``Source.loop_starts``). A frame of the recorded source and one of the user's
other code (an earlier cell's ``train``) are traced alike, each with its own file's statements.
A *foreign* frame is a library's loop followed for its passes (``passes.py``): its statements
are no moments of their own, only what they changed is (``Runner.library_completed``).
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

    def library_completed(self, statement: Statement, frame: types.FrameType) -> None: ...

    def returned(self, state: Frame) -> None: ...

    def moments_so_far(self) -> int: ...


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
        foreign: bool = False,
    ) -> None:
        self.recorder, self.frame, self.source, self.file = recorder, frame, source, file
        self.foreign = foreign
        self.start: int | None = None  # a call of the user's code: the moments it began at
        self.wrote = False  # and whether a moment since wrote a store (else it is stepped over)
        self.began = 0  # the moments when the current statement began
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
                self.recorder.returned(self)
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
        self.began = self.recorder.moments_so_far()
        header = self.source.loop_starts.get(statement.first)
        if header is not None and lasti == start:  # not an inner loop's next pass, a with's exit
            self.recorder.pass_started(frame.f_code, header)

    def done(self) -> None:
        """The current statement completed (unless it raised)."""
        statement, raised = self.current, self.raised
        self.current, self.raised = None, False
        if statement is None or raised or statement.compound:
            return
        if self.foreign:
            self.recorder.library_completed(statement, self.frame)
        else:
            self.recorder.completed(statement, self.frame, self.file)
