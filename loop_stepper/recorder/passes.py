"""The iterations of a recording: the passes of the training loop, found at the first backward
(the innermost loop around it, in the user's code or in a library's: d2l's ``train_ch11``
loops over the batches and calls the user's update back), or at the first step written by hand
of a loop without one (``step.py``); without any loop, each backward is an iteration.

A library's loop is followed by tracing its frame's lines from then on (and any later frame of
the same code: the next epoch's ``fit_epoch``), its statements never moments of their own, so
that its passes are counted and the recording stops at the start of the pass after the
iterations asked for, wherever the loop runs.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Protocol

from loop_stepper.recorder import files, library
from loop_stepper.recorder.frame import Frame
from loop_stepper.recorder.library import is_library, statement_at
from loop_stepper.recorder.source import Source
from loop_stepper.recorder.trace import Trace

Loop = tuple[types.CodeType, int]  # a loop by its code and its header's line


class Follower(Protocol):
    trace: Trace
    filename: str
    adopted: dict[types.CodeType, Source]

    def frames_for(self, frame: types.FrameType) -> Frame | None: ...

    def stop(self, why: str) -> None: ...


class Passes:
    def __init__(self, recorder: Follower, limit: int | None) -> None:
        self.recorder, self.limit = recorder, limit
        self.passes: dict[Loop, int] = {}  # of every loop traced, the training loop's once known
        self.began: dict[Loop, int] = {}  # the moment each loop's last pass began at
        self.loop: Loop | None = None
        self.backwards = 0
        self.iteration = 0
        self.before = 0  # the iterations of the training loops before this one (a second model's)
        self.where = ""  # the training loop, in words: "line 12", "line 40 of d2l/torch.py"

    def started(self, code: types.CodeType, header: int) -> None:
        """A pass of the loop at ``header`` in ``code`` begins: past the iterations asked for,
        the recording stops here."""
        key = (code, header)
        self.passes[key] = self.passes.get(key, 0) + 1
        self.began[key] = len(self.recorder.trace.moments)
        if key != self.loop:
            return
        if self.limit is not None and self.before + self.passes[key] > self.limit:
            self.recorder.stop(
                f"stopped after {self.limit} iteration{'s' * (self.limit != 1)} of the loop at "
                f"{self.where} (iterations={self.limit}; iterations=None records to the end)"
            )
        self.iteration = self.before + self.passes[key]

    def backward(self, frame: types.FrameType | None) -> None:
        """A backward begins (``frame``: its caller's): the first finds the training loop;
        without one, each backward is an iteration."""
        self.backwards += 1
        if self.backwards == 1 and self.loop is None:
            self.found(self.around(frame))
        elif self.loop is not None and not self._inside(frame, self.loop):
            loop = self.around(frame)  # a training loop after the first (a new model's)
            if loop is not None and loop != self.loop:
                self.before = self.iteration
                self.found(loop)
        elif self.loop is None:
            if self.limit is not None and self.backwards > self.limit:
                self.recorder.stop(
                    f"stopped after {self.limit} backward passes (iterations={self.limit})"
                )
            self.iteration = self.backwards

    def _inside(self, frame: types.FrameType | None, loop: Loop) -> bool:
        """``frame`` runs inside a pass of ``loop`` (in its own frame or a caller's)."""
        code, header = loop
        while frame is not None:
            if frame.f_code is code:
                state = getattr(frame.f_trace, "__self__", None)
                current = getattr(state, "current", None)
                return current is not None and header in current.loops
            frame = frame.f_back
        return False

    def around(self, frame: types.FrameType | None) -> Loop | None:
        """The innermost loop around ``frame``'s running statement, out through its callers:
        the user's frames by their statements, a library's by its file's (followed from
        then on: ``follow``)."""
        while frame is not None:
            state = self.recorder.frames_for(frame)
            if state is not None:
                if state.current is not None and state.current.loops:
                    return frame.f_code, state.current.loops[-1]
            elif is_library(frame.f_code.co_filename):
                source, statement = statement_at(frame)
                if source is not None and statement.loops:
                    self.follow(frame, source)
                    loop = frame.f_code, statement.loops[-1]
                    self.began[loop] = self._calling(frame)
                    return loop
            frame = frame.f_back
        return None

    def _calling(self, frame: types.FrameType) -> int:
        """The moment the user's statement that called into a library's loop began at (its
        pass began after, untraced: the moments since are its first iteration's)."""
        outer: types.FrameType | None = frame.f_back
        while outer is not None:
            state = self.recorder.frames_for(outer)
            if state is not None:
                return state.began
            outer = outer.f_back
        return 0

    def follow(self, frame: types.FrameType, source: Source) -> None:
        """Trace a library's loop from now on: this frame's lines, and any later frame of its
        code, as a frame that counts passes and makes no moment of its own statements."""
        runner: Any = self.recorder
        state = Frame(runner, frame, source, frame.f_code.co_filename, foreign=True)
        state.current = source.at_line.get(frame.f_lineno)
        state.lasti = frame.f_lasti
        frame.f_trace = state.trace
        self.recorder.adopted[frame.f_code] = source

    def found(self, loop: Loop | None) -> None:
        """The training loop is known: the moments of its pass so far are its iteration's."""
        self.loop = loop
        if loop is None:
            self.iteration = 1
            first = 0
        else:
            self.passes.setdefault(loop, 1)  # a library's loop is followed from inside a pass
            self.iteration = self.before + self.passes[loop]
            first = self.began.get(loop, 0)
            self.where = self.named(loop)
        for m in self.recorder.trace.moments[first:]:
            m["iteration"] = self.iteration

    def inside(self, stop: BaseException, visited: set[str], title: Callable[[str], str]) -> str:
        """Where a stop of the run landed, in words, when it was inside a call of the user's
        other code or a library's loop: the rest of that call (its prints, its evaluation)
        did not run ('' at the top of the cell)."""
        inside: types.FrameType | None = None
        tb = stop.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_filename in visited or code in self.recorder.adopted:
                inside = tb.tb_frame
            tb = tb.tb_next
        if inside is None:
            return ""
        name, line = inside.f_code.co_filename, inside.f_lineno
        return (
            f"; it stopped inside {inside.f_code.co_name}() of {title(name)} "
            f"(line {line}): the rest of that call did not run"
        )

    def named(self, loop: Loop) -> str:
        code, header = loop
        if code.co_filename == self.recorder.filename:
            return f"line {header}"
        if code in self.recorder.adopted:
            return f"line {header} of {library.title(code.co_filename)}"
        return f"line {header} of {files.title(code.co_filename)}"
