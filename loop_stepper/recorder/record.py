"""``record``: run the user's own training code for real and keep a moment after every
statement it executes, also inside the functions it defines and calls (``moments.py``).

The source is compiled under a file name of its own and run with ``sys.settrace``: only frames
of the user's code are traced line by line (PyTorch's own Python is not), and a moment is taken
when a statement completes (the next statement of its frame starts, or the frame returns). A
probe (``probe.py``) hears the backward passes, steps and zero_grads between them: what the
statement read, and what a library changed (a moment of its own, ``library.py``). Nothing here
changes a number: the tensors are only read.

**Fail-open.** The recording serves the user's code, never the other way round: an error of
ours in any hook stops the recording there (``failed``: the trace keeps it for a bug report, as
``Trace.internal_error``) and the code runs on to its end untraced; the cap of moments stops
the recording, not the code. Only ``iterations`` stops the code itself, at the start of the pass
after the ones asked for (``passes.py``), and ``Trace.stopped`` says so.
"""

from __future__ import annotations

import contextlib
import itertools
import linecache
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

import torch

from loop_stepper import stores
from loop_stepper.recorder import library
from loop_stepper.recorder.files import UserFiles, title
from loop_stepper.recorder.frame import Frame, TraceFunction
from loop_stepper.recorder.heard import Heard
from loop_stepper.recorder.internal import InternalError
from loop_stepper.recorder.marks import by_hand, is_loss, read_by
from loop_stepper.recorder.moments import MAX_MOMENTS, Moments
from loop_stepper.recorder.observer import Observer
from loop_stepper.recorder.passes import Passes
from loop_stepper.recorder.probe import Probe
from loop_stepper.recorder.source import Source, Statement
from loop_stepper.recorder.step import loop_around
from loop_stepper.recorder.trace import StatementError, Trace
from loop_stepper.recorder.watched import Watched

__all__ = ["MAX_MOMENTS", "Recorder", "record"]

_numbers = itertools.count(1)
Watcher = Callable[[Trace, str], Observer]
_HIDDEN = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")


class _Stop(BaseException):
    """Raised into the user's code to end it after the iterations asked for (a BaseException:
    ``except Exception`` in the user's loop does not swallow it)."""


def record(
    source: str,
    namespace: dict[str, Any] | None = None,
    *,
    iterations: int | None = 3,
    filename: str | None = None,
    watcher: Watcher | None = None,
    step_into: bool = False,
) -> Trace:
    """Run ``source`` in ``namespace`` (a fresh ``__main__`` dict when None) and record a
    moment after every statement; stop after ``iterations`` iterations (None: to the end; the
    recording holds at most ``MAX_MOMENTS`` moments, the code runs on). A statement that raises
    ends the recording: its error is ``Trace.error``, in its own words, and ``record`` does not
    raise it. ``step_into``: keep the moments of calls that changed no store (stepped over by
    default). ``watcher`` makes another observer of the run (the doctor), given the trace being
    made and the file name the source runs under; it is told everything the recorder is."""
    if iterations is not None and iterations < 1:
        raise ValueError("iterations must be at least 1 (or None: to the end)")
    space: dict[str, Any] = {"__name__": "__main__"} if namespace is None else namespace
    name = filename or f"<loop-stepper-{next(_numbers)}>"
    code = compile(source, name, "exec")  # a SyntaxError is Python's own, raised
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # tracebacks
    try:
        parsed, broken = Source.parse(source), None
    except Exception as error:  # ours: the cell runs all the same, untraced
        parsed, broken = Source(source), error
    recorder = Recorder(parsed, name, iterations, step_into)
    if broken is not None:
        recorder.failed("parse", broken)
    recorder.begin(space, watcher)
    with Probe(recorder.also) if recorder.also is not None else contextlib.nullcontext():
        recorder.run(code, space)
    return recorder.trace


class Recorder(Heard):
    """The trace function, the probe's observer (``Heard``) and the moments they make."""

    def __init__(
        self, source: Source, filename: str, iterations: int | None, step_into: bool = False
    ) -> None:
        self.source, self.filename = source, filename
        self.trace = Trace(source.text)
        self.watched = Watched()
        self.files = UserFiles({})  # the user's other code: an earlier cell's functions
        self.moments = Moments(self.trace, self.watched, step_into)
        self.passes = Passes(self, iterations)
        self.adopted: dict[types.CodeType, Source] = {}  # a library's loop, followed
        self.also: Observer | None = None  # the other observer of the run (the doctor)
        self.previous: Any = None  # the trace function before ours (a debugger's, coverage's)
        self.stepped = False  # an optimizer stepped since the last moment
        self.completing: tuple[str | None, int] | None = None  # the statement being completed

    # -- running --------------------------------------------------------------------

    def begin(self, space: dict[str, Any], watcher: Watcher | None) -> None:
        """What the namespace holds before the first statement (a model made in an earlier
        cell), and the other observer (the doctor)."""
        if self.off:
            return
        try:
            self.files = UserFiles(space)
            self.watched.space, self.watched.loop_variables = space, self.source.loop_variables
            self.watched.settle(space)
            self.trace.start = dict(stores.view(self.watched))
            self.moments.before = self.watched.marks()
            self.moments.shown = (tuple(self.watched.named), len(self.watched.optimizers))
            self.moments.held = {n: id(t) for n, t in self.watched.named.items()}
            self.also = None if watcher is None else watcher(self.trace, self.filename)
        except Exception as error:  # ours: the cell runs all the same, untraced
            self.failed("begin", error)

    def run(self, code: types.CodeType, space: dict[str, Any]) -> None:
        """Run the user's code to its end (or to the iterations asked for), in their own
        namespace: a failure of ours stops the recording, never the code (``failed``)."""
        self.previous = previous = sys.gettrace()
        with Probe(self):
            try:
                if not self.off:
                    sys.settrace(self.call)
                try:
                    exec(code, space)  # the user's own code, in their own kernel
                finally:
                    sys.settrace(previous)
            except _Stop as stop:
                self.trace.ended = "stopped"
                inside = self.passes.inside(stop, self.moments.visited, self._title)
                if inside and self.trace.stopped is not None:
                    self.trace.stopped += inside
            except BaseException as error:  # the user's, in its own words; never raised
                self.trace.ended = "error"
                self.trace.error = StatementError.raised(error, self.filename, self.source.at_line)
        self.trace.iterations = self.passes.iteration
        try:
            self.trace.sources = self.files.texts(self.moments.visited)
            self.trace.titles = {name: self._title(name) for name in self.trace.sources}
        except Exception as error:
            self.failed("end", error)
        if self.off and self.trace.ended == "end":
            self.trace.ended = "stopped"  # the recording stopped, the code ran to its end

    def failed(self, hook: str, error: Exception) -> None:
        """An internal error in ``hook``: the recording stops there and the user's code runs on
        untraced to its end; the trace keeps the error for a bug report, apart from theirs."""
        if self.off:
            return
        file, line = self._where()
        self.trace.internal_error = internal = InternalError.of("recorder", hook, error, file, line)
        at = f"at line {line}{'' if file is None else ' of ' + self._title(file)} "
        self.halt(internal.said(at if line else ""))

    def halt(self, why: str) -> None:
        """Stop recording here, and let the user's code run on untraced (the trace function
        before ours back, our frames let go); ``Trace.stopped`` says why."""
        if self.off:
            return
        self.off = True
        if self.also is not None:
            self.also.off = True  # the doctor's findings past here would have no moment
        if self.trace.stopped is None:
            self.trace.stopped = why
        sys.settrace(self.previous)
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None:
            if self.frames_for(frame) is not None:
                frame.f_trace = None
            frame = frame.f_back

    def stop(self, why: str) -> None:
        """End the user's code here (the iterations asked for were recorded)."""
        self.trace.stopped = why
        raise _Stop(why)

    def _where(self) -> tuple[str | None, int | None]:
        """The file and line of the user's statement running now (None, None: none)."""
        if self.completing is not None:
            return self.completing
        with contextlib.suppress(Exception):
            frame: types.FrameType | None = sys._getframe(1)
            while frame is not None:
                state = self.frames_for(frame)
                if state is not None and state.current is not None:
                    return state.file, state.current.first
                frame = frame.f_back
        return None, None

    def _title(self, name: str) -> str:
        return (
            title(name)
            if name.startswith("<") or name in self.files.known
            else (library.title(name))
        )

    def call(self, frame: types.FrameType, event: str, arg: Any) -> TraceFunction | None:
        """The global trace function: a frame of the source, or of the user's other code, is
        traced line by line (a call of a function of theirs may be stepped over); a library's
        loop that is the training loop is followed for its passes; any other frame runs
        untraced. Fail-open: an error of ours stops the recording, never the user's code."""
        try:
            return self._call(frame)
        except Exception as error:
            self.failed("call", error)
            return None

    def _call(self, frame: types.FrameType) -> TraceFunction | None:
        code = frame.f_code
        if code.co_name in _HIDDEN:
            return None
        name = code.co_filename
        if name == self.filename:
            state = Frame(self, frame, self.source)
            if code.co_name != "<module>":
                self.moments.opened(state)
            return state.trace
        known = self.files.known  # decided once per file name: one lookup per call
        source = known[name] if name in known else self.files.source_of(name)
        if source is not None:
            state = Frame(self, frame, source, name)
            self.moments.opened(state)
            return state.trace
        followed = self.adopted.get(code)
        if followed is not None:  # a library's training loop: its next epoch's frame
            return Frame(self, frame, followed, name, foreign=True).trace
        return None

    def returned(self, state: Frame) -> None:
        self.moments.closed(state)

    def moments_so_far(self) -> int:
        return len(self.trace.moments)

    def frames_for(self, frame: types.FrameType) -> Frame | None:
        trace = frame.f_trace
        owner = getattr(trace, "__self__", None)
        return owner if isinstance(owner, Frame) and not owner.foreign else None

    # -- iterations -----------------------------------------------------------------

    def pass_started(self, code: types.CodeType, header: int) -> None:
        self.passes.started(code, header)

    # -- moments ----------------------------------------------------------------------

    def completed(
        self, statement: Statement, frame: types.FrameType, file: str | None = None
    ) -> None:
        self.completing = (file, statement.first)
        scope = frame.f_locals
        watched, moments = self.watched, self.moments
        if statement.data:
            watched.check_values(scope, statement.touches)
            named = [scope.get(n) for n in statement.touches]
            touched = [v for v in named if isinstance(v, torch.Tensor) and watched.name_of(v)]
            if moments.drawn.regrad(touched or list(watched.named.values())):
                moments.writes.add("grad")  # p.grad.data.zero_(): no version tells
        local = None if scope is watched.space else frame
        owner = self.frames_for(frame)
        loops = frozenset() if local is None or owner is None else owner.source.loop_variables
        watched.settle(scope, statement.assigns + statement.touches, local, loops)
        self._roots(statement, scope)
        if statement.grad:
            moments.reads.add("grad")
        marks = watched.marks(statement.calls or statement.data)
        hand = marks["params"] != moments.before["params"] and not self.stepped
        if hand and self.passes.loop is None and self.passes.backwards == 0:  # no backward()
            loop = loop_around(statement, frame, self.frames_for, watched)
            if loop is not None:
                self.passes.found(loop)
        if hand or statement.data:
            training = statement.grad or bool(self.passes.loop)
            moments.reads |= by_hand(statement, scope, watched, training)
        self.stepped = False
        watched.moved.clear()
        moments.take(statement, frame.f_code.co_name, file, self.passes.iteration, owner, marks)
        self.completing = None
        self.capped()

    def capped(self) -> None:
        if self.moments.full:
            self.halt(
                f"recording stopped at {MAX_MOMENTS:,} moments, the most a trace holds; "
                "the cell ran on to its end, untraced"
            )

    def _roots(self, statement: Statement, scope: Mapping[str, Any]) -> None:
        """A tensor with a graph that the statement assigned is the newest graph (``out``);
        a 0-dim one the loss, unless a backward named the loss otherwise. A sum of losses a
        backward already freed (``running_loss += loss``) is neither."""
        watched = self.watched
        for name in statement.assigns:
            value = scope.get(name)
            if not isinstance(value, torch.Tensor) or value.grad_fn is None:
                continue
            if any(id(n) in watched.spent for n, _ in value.grad_fn.next_functions):
                continue
            before = watched.autograd.root
            watched.autograd.start(value)
            self.moments.reads |= read_by(value, before, watched)
            if is_loss(value) and (not watched.loss_names or name in watched.loss_names):
                watched.loss = value
