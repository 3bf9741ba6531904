"""``record``: run the user's own training code for real and keep a moment after every
statement it executes, also inside the functions it defines and calls.

The source is compiled under a file name of its own and run with ``sys.settrace``: only frames
of that code are traced line by line (PyTorch's own Python is not), and a moment is taken when
a statement of the source completes (the next statement of its frame starts, or the frame
returns). A probe (``probe.py``) hears the backward passes, steps and zero_grads between them:
what the statement read. Nothing here changes a number: the tensors are only read.

An **iteration** is one pass of the loop whose body calls ``backward()`` (directly or through
a function it calls): the innermost loop of the source around the running backward, found at
the first backward; in a loop without one (a backward written by hand), the loop around the
first step written by hand that is not a loop over the parameters (``step.py``). The run
stops at the start of the pass after ``iterations`` (the loop of 100,000 stops after 3, and
``Trace.stopped`` says so), and after ``MAX_MOMENTS`` in any case.
"""

from __future__ import annotations

import contextlib
import itertools
import linecache
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from loop_stepper import stores
from loop_stepper.recorder.drawn import Drawn
from loop_stepper.recorder.files import UserFiles, title
from loop_stepper.recorder.frame import Frame, TraceFunction
from loop_stepper.recorder.internal import InternalError
from loop_stepper.recorder.marks import by_hand, is_loss, read_by
from loop_stepper.recorder.probe import Observer, Probe
from loop_stepper.recorder.source import Source, Statement
from loop_stepper.recorder.step import loop_around
from loop_stepper.recorder.trace import Moment, StatementError, Trace
from loop_stepper.recorder.watched import STORES, Watched

MAX_MOMENTS = 2_000  # a trace's moments at most, whatever ``iterations`` says
_numbers = itertools.count(1)
Watcher = Callable[[Trace, str], Observer]
_HIDDEN = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")


class _Stop(BaseException):
    """Raised into the user's code to end the recording (a BaseException: ``except Exception``
    in the user's loop does not swallow it)."""


def record(
    source: str,
    namespace: dict[str, Any] | None = None,
    *,
    iterations: int | None = 3,
    filename: str | None = None,
    watcher: Watcher | None = None,
) -> Trace:
    """Run ``source`` in ``namespace`` (a fresh ``__main__`` dict when None) and record a
    moment after every statement; stop after ``iterations`` iterations (None: to the end, at
    most ``MAX_MOMENTS`` moments). A statement that raises ends the recording: its error is
    ``Trace.error``, in its own words, and ``record`` does not raise it. ``watcher`` makes
    another observer of the run (the doctor), given the trace being made and the file name the
    source runs under; it is told everything the recorder is."""
    if iterations is not None and iterations < 1:
        raise ValueError("iterations must be at least 1 (or None: to the end)")
    space: dict[str, Any] = {"__name__": "__main__"} if namespace is None else namespace
    name = filename or f"<loop-stepper-{next(_numbers)}>"
    parsed = Source.parse(source)
    code = compile(source, name, "exec")
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # tracebacks
    _warm()
    recorder = Recorder(parsed, name, iterations)
    recorder.begin(space, watcher)
    with Probe(recorder.also) if recorder.also is not None else contextlib.nullcontext():
        recorder.run(code, space)
    return recorder.trace


def _warm() -> None:
    """Import what PyTorch imports on first use, before the trace is on: an optimizer's first
    ``__init__`` imports torch._dynamo (seconds), and under the trace function every call of
    that import would be heard (three times as long). The user's first optimizer pays it
    anyway; here it is paid untraced."""
    with contextlib.suppress(ImportError):
        import torch._dynamo  # noqa: F401


class Recorder(Observer):
    """The trace function, the probe's observer and the moments they make."""

    def __init__(
        self,
        source: Source,
        filename: str,
        iterations: int | None,
        files: UserFiles | None = None,
    ) -> None:
        self.source, self.filename, self.limit = source, filename, iterations
        self.also: Observer | None = None  # the other observer of the run (the doctor)
        self.previous: Any = None  # the trace function before ours (a debugger's, coverage's)
        self.files = files or UserFiles({})  # the user's other code: an earlier cell's functions
        self.visited: set[str] = set()  # the files of that code its moments are in
        self.watched = Watched()
        self.drawn = Drawn()  # each parameter's last drawing, made again when it changed
        self.trace = Trace(source.text)
        self.reads: set[str] = set()  # what the probe heard read since the last moment
        self.writes: set[str] = set()  # and written (a zero_grad of None writes .grad)
        self.before = self.watched.marks()
        self.shared: dict[str, Any] = {}  # the last moment's parts, reused while equal
        self.last_stores: dict[str, Any] | None = None  # the last moment's stores, whole
        self.last_names: tuple[str, ...] = ()
        # the iteration: passes of every loop of the source, the training loop once known
        self.passes: dict[tuple[types.CodeType, int], int] = {}
        self.pass_began: dict[tuple[types.CodeType, int], int] = {}  # at which moment
        self.loop: tuple[types.CodeType, int] | None = None
        self.backwards = 0
        self.stepped = False  # an optimizer stepped since the last moment
        self.iteration = 0

    # -- running --------------------------------------------------------------------

    def begin(self, space: dict[str, Any], watcher: Watcher | None) -> None:
        """What the namespace holds before the first statement (a model made in an earlier
        cell), and the other observer (the doctor)."""
        try:
            self.files = UserFiles(space)
            self.watched.space, self.watched.loop_variables = space, self.source.loop_variables
            self.watched.settle(space)
            self.trace.start = dict(stores.view(self.watched))
            self.before = self.watched.marks()
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
                self._stopped_inside(stop)
            except BaseException as error:  # the user's, in its own words; never raised
                self.trace.ended = "error"
                self.trace.error = self._error(error)
        self.trace.iterations = self.iteration
        try:
            self.trace.sources = self.files.texts(self.visited)
            self.trace.titles = {name: title(name) for name in self.trace.sources}
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
        self.halt(internal.said(f"at {self._at(file, line)} " if line else ""))

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

    def _where(self) -> tuple[str | None, int | None]:
        """The file and line of the user's statement running now (None, None: none)."""
        with contextlib.suppress(Exception):
            frame: types.FrameType | None = sys._getframe(1)
            while frame is not None:
                state = self.frames_for(frame)
                if state is not None and state.current is not None:
                    return state.file, state.current.first
                frame = frame.f_back
        return None, None

    def _at(self, file: str | None, line: int) -> str:
        return f"line {line}" + ("" if file is None else f" of {title(file)}")

    def call(self, frame: types.FrameType, event: str, arg: Any) -> TraceFunction | None:
        """The global trace function: a frame of the source, or of the user's other code, is
        traced line by line; any other runs untraced. Fail-open: an error of ours stops the
        recording (``failed``), never the user's code."""
        try:
            return self._call(frame)
        except Exception as error:
            self.failed("call", error)
            return None

    def _call(self, frame: types.FrameType) -> TraceFunction | None:
        code = frame.f_code
        name = code.co_filename
        if code.co_name in _HIDDEN:
            return None
        if name == self.filename:
            return Frame(self, frame, self.source).trace
        known = self.files.known  # decided once per file name: one lookup per call
        source = known[name] if name in known else self.files.source_of(name)
        return None if source is None else Frame(self, frame, source, name).trace

    def _stopped_inside(self, stop: _Stop) -> None:
        """A recording that stopped inside a call of the user's other code says so: the rest
        of that call (its prints, its evaluation) did not run."""
        inside: types.FrameType | None = None
        tb = stop.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename in self.visited:
                inside = tb.tb_frame
            tb = tb.tb_next
        if inside is None or self.trace.stopped is None:
            return
        name, line = inside.f_code.co_filename, inside.f_lineno
        self.trace.stopped += (
            f"; it stopped inside {inside.f_code.co_name}() of {title(name)} (line {line}): "
            "the rest of that call did not run"
        )

    def _error(self, error: BaseException) -> StatementError:
        line: int | None = None
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        statement = None if line is None else self.source.at_line.get(line)
        first = None if statement is None else statement.first
        code = None if statement is None else statement.code
        return StatementError(str(error), type(error).__name__, first, code)

    def stop(self, why: str) -> None:
        self.trace.stopped = why
        raise _Stop(why)

    # -- iterations -----------------------------------------------------------------

    def pass_started(self, code: types.CodeType, header: int) -> None:
        key = (code, header)
        self.passes[key] = self.passes.get(key, 0) + 1
        self.pass_began[key] = len(self.trace.moments)
        if key != self.loop:
            return
        if self.limit is not None and self.passes[key] > self.limit:
            self.stop(
                f"stopped after {self.limit} iteration{'s' * (self.limit != 1)} of the loop at "
                f"line {header} (iterations={self.limit}; iterations=None records to the end)"
            )
        self.iteration = self.passes[key]

    def _training_loop(self) -> tuple[types.CodeType, int] | None:
        """The innermost loop of the source around the running backward."""
        frame = sys._getframe(1)
        while frame is not None:
            state = self.frames_for(frame)
            if state is not None and state.current is not None and state.current.loops:
                return frame.f_code, state.current.loops[-1]
            frame = frame.f_back  # type: ignore[assignment]
        return None

    def _found(self, loop: tuple[types.CodeType, int] | None) -> None:
        """The training loop is known (at the first backward, or the first step written by
        hand of a loop without one): the moments of its pass so far are its iteration's."""
        self.loop = loop
        first = self.pass_began.get(loop, 0) if loop else 0
        self.iteration = self.passes.get(loop, 1) if loop else 1
        for m in self.trace.moments[first:]:
            m["iteration"] = self.iteration

    def frames_for(self, frame: types.FrameType) -> Frame | None:
        trace = frame.f_trace
        owner = getattr(trace, "__self__", None)
        return owner if isinstance(owner, Frame) else None

    # -- what the probe hears ----------------------------------------------------------

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        self.backwards += 1
        if self.backwards == 1 and self.loop is None:
            self._found(self._training_loop())
        elif self.loop is None:
            if self.limit is not None and self.backwards > self.limit:
                self.stop(f"stopped after {self.limit} backward passes (iterations={self.limit})")
            self.iteration = self.backwards
        self.reads |= {"loss", "graph", "grad"}
        self.writes |= {"grad", "graph"}
        self.watched.reached(roots)
        self._names_of_loss(roots)

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        root = roots[0] if roots else None
        if root is not None and root.grad_fn is not None:
            self.watched.autograd.start(root)
            self.watched.autograd.backward(root, retain_graph)
            if not retain_graph:
                self.watched.spent[id(root.grad_fn)] = root.grad_fn
        if root is not None and is_loss(root):
            self.watched.loss = root

    def failed_backward(self, roots: Sequence[torch.Tensor], error: BaseException) -> None:
        root = roots[0] if roots else None
        if root is not None and root.grad_fn is not None:
            self.watched.autograd.start(root)
            self.watched.autograd.backward(root, False)  # a graph PyTorch refused is freed

    def before_step(self, optimizer: torch.optim.Optimizer) -> None:
        self.watched.optimizer(optimizer)
        self.stepped = True
        self.reads |= {"grad", "params"}
        self.writes.add("params")
        if optimizer.state:
            self.reads.add("optimizer_state")

    def after_step(self, optimizer: torch.optim.Optimizer) -> None:
        if optimizer.state:  # a stateful optimizer (momentum, Adam): the fifth store
            self.reads.add("optimizer_state")
            self.writes.add("optimizer_state")

    def zero_grad(self, owner: Any, set_to_none: bool) -> None:
        if isinstance(owner, torch.optim.Optimizer):
            self.watched.optimizer(owner)
        self.writes.add("grad")

    def clip(self, parameters: list[torch.Tensor], how: str) -> None:
        self.reads.add("grad")

    def _names_of_loss(self, roots: Sequence[torch.Tensor]) -> None:
        """The names the tensor backward runs from goes by (``loss``): a later statement
        assigning one of them is the loss line."""
        frame = sys._getframe(2)
        while frame is not None and self.frames_for(frame) is None:  # the user's innermost
            frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            return
        ids = {id(r) for r in roots}
        self.watched.loss_names |= {n for n, v in frame.f_locals.items() if id(v) in ids}

    # -- moments ----------------------------------------------------------------------

    def completed(
        self, statement: Statement, frame: types.FrameType, file: str | None = None
    ) -> None:
        scope = frame.f_locals
        watched = self.watched
        if statement.data:
            watched.check_values(scope, statement.touches)
        local = None if scope is watched.space else frame
        watched.settle(scope, statement.assigns + statement.touches, local)
        self._roots(statement, scope)
        marks = watched.marks()
        if statement.grad:
            self.reads.add("grad")
        hand = marks["params"] != self.before["params"] and not self.stepped
        if hand and self.loop is None and self.backwards == 0:  # a loop without backward()
            loop = loop_around(statement, frame, self.frames_for, watched)
            if loop is not None:
                self._found(loop)
        if hand or statement.data:
            self.reads |= by_hand(statement, scope, watched, statement.grad or bool(self.loop))
        self.stepped = False
        watched.moved.clear()
        writes = [s for s in STORES if marks[s] != self.before[s] or s in self.writes]
        reads = [s for s in STORES if s in self.reads]
        self.before, self.reads, self.writes = marks, set(), set()
        name = frame.f_code.co_name
        moment: Moment = {
            "line": statement.first,
            "code": statement.code,
            "function": None if name == "<module>" else name,
            "file": file,
            "iteration": self.iteration,
            **self._stores(bool(writes)),  # type: ignore[typeddict-item]
            "reads": reads,
            "writes": writes,
        }
        if file is not None:
            self.visited.add(file)
        self.trace.moments.append(moment)
        if len(self.trace.moments) >= MAX_MOMENTS:
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
            self.reads |= read_by(value, before, watched)
            if is_loss(value) and (not watched.loss_names or name in watched.loss_names):
                watched.loss = value

    def _stores(self, changed: bool) -> dict[str, Any]:
        """The loss, parameters, graph and optimizer state a moment shows: the last moment's
        very objects when its statement wrote no store and renamed nothing (most statements of
        a loop: ``ix = …``, ``lr = …``), else drawn: a parameter's unchanged value and ``.grad``
        are the last drawing (``Drawn``), the graph and each optimizer state row the last one's
        while equal."""
        watched = self.watched
        names = tuple(watched.named)
        if not changed and self.last_stores is not None and names == self.last_names:
            return self.last_stores
        drawn: stores.StoresView = {
            "params": self.drawn.params(watched),
            "optimizer_state": stores.state_of(watched.optimizers, watched.named),
            "loss": watched.loss_value,
            "graph": watched.graph(),
        }
        self.last_names = names
        self.last_stores = {
            "loss": drawn["loss"],
            "params": drawn["params"],  # Drawn shares each unchanged value and .grad itself
            "graph": self._share("graph", drawn["graph"]),
            "optimizer_state": [
                self._share(f"s:{row['name']}", row) for row in drawn["optimizer_state"]
            ],
        }
        return self.last_stores

    def _share(self, key: str, part: Any) -> Any:
        """``part``, or the last moment's equal one: unchanged parts are one object."""
        kept = self.shared.get(key)
        if kept is not None and (kept is part or kept == part):
            return kept
        self.shared[key] = part
        return part
