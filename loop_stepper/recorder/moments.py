"""The moments of a recording as the user sees them: one after each statement of their code, or
after a change a library made (``library.py``), with what it read and wrote and the stores
drawn, shared with the moment before where unchanged.

**The training, not the noise.** A call of the user's code whose moments wrote no store and
made no parameter or optimizer (an evaluation under ``no_grad``, ``estimate_loss()``, a
Dataset's ``__getitem__``, a print or a plot) is stepped over: its moments go, and the
statement that called it is its one moment (``step_into`` keeps them). A library's change
heard while a statement of the user's calls it (``accelerator.backward(loss)``) is that
statement's, once the statement completes with nothing of the user's between; otherwise (a
library's loop calling back the user's update) it stays a moment of its own.

The cap ``MAX_MOMENTS`` counts the moments the user sees: those of a call not yet known to
write are not counted, and such a call is let go past the cap as it would be at its end.
"""

from __future__ import annotations

from typing import Any

from loop_stepper import stores
from loop_stepper.recorder.drawn import Drawn
from loop_stepper.recorder.frame import Frame
from loop_stepper.recorder.source import Statement
from loop_stepper.recorder.trace import Moment, Trace
from loop_stepper.recorder.watched import STORES, Watched

MAX_MOMENTS = 2_000  # a trace's moments at most, whatever ``iterations`` says


class Moments:
    def __init__(self, trace: Trace, watched: Watched, step_into: bool = False) -> None:
        self.trace, self.watched, self.step_into = trace, watched, step_into
        self.drawn = Drawn()  # each parameter's last drawing, made again when it changed
        self.reads: set[str] = set()  # what the probe heard read since the last moment
        self.writes: set[str] = set()  # and written (a zero_grad of None writes .grad)
        self.before: dict[str, Any] = {}  # each store's mark at the last moment
        self.calls: list[Frame] = []  # the calls of the user's code running, outermost first
        # a library's change not yet known to be a statement's own: the first such moment and
        # the frame of the user's statement running then
        self.borrowed: tuple[int, Frame | None] | None = None
        self.visited: set[str] = set()  # the files moments are in
        self.shared: dict[str, Any] = {}  # the last moment's parts, reused while equal
        self.last: dict[str, Any] | None = None  # the last moment's stores, whole
        self.last_names: tuple[str, ...] = ()
        self.shown: tuple[tuple[str, ...], int] = ((), 0)  # the parameters and optimizers shown
        self.held: dict[str, int] = {}  # each shown name's tensor, by id
        self.looked: tuple[int, int] = (-1, -1)  # Watched.shows and the optimizers, last looked

    # -- a moment ----------------------------------------------------------------------

    def take(
        self,
        statement: Statement,
        function: str,
        file: str | None,
        iteration: int,
        owner: Frame | None = None,
        marks: dict[str, Any] | None = None,
    ) -> None:
        """The moment after ``statement`` (of ``file``: None for the recorded source), run in
        ``owner`` (a frame of the user's; None for a library's change, borrowed until known);
        ``marks``: the stores' marks now, when already read."""
        marks = self.watched.marks() if marks is None else marks
        reads, writes = set(self.reads), {s for s in STORES if marks[s] != self.before[s]}
        writes |= self.writes
        if owner is not None and self.borrowed is not None:
            first, lender = self.borrowed
            self.borrowed = None
            if lender is owner and owner.began == first:  # the library's change was its own
                for m in self.trace.moments[first:]:
                    reads.update(m["reads"])
                    writes.update(m["writes"])
                del self.trace.moments[first:]
        self.before, self.reads, self.writes = marks, set(), set()
        shown = False
        seen = (self.watched.shows, len(self.watched.optimizers))
        if seen != self.looked:  # the parameters shown were made again: compare them
            self.looked = seen
            named = self.watched.named
            # a parameter or an optimizer made (or renamed): the stores show more than before
            shown = (tuple(named), seen[1]) != self.shown
            self.shown = (tuple(named), seen[1])
            held = {n: id(t) for n, t in named.items()}
            if any(held[n] != i for n, i in self.held.items() if n in held):
                writes.add("params")  # a name now shows another tensor: a model replaced
            self.held = held
        moment: Moment = {
            "line": statement.first,
            "code": statement.code,
            "function": None if function == "<module>" else function,
            "file": file,
            "iteration": iteration,
            **self._stores(writes),  # type: ignore[typeddict-item]
            "reads": [s for s in STORES if s in reads],
            "writes": [s for s in STORES if s in writes],
        }
        if file is not None:
            self.visited.add(file)
        self.trace.moments.append(moment)
        if writes or shown:
            for call in self.calls:
                call.wrote = True

    def borrow(self, lender: Frame | None) -> None:
        """The moment just taken was a library's change, made while ``lender``'s statement
        ran: it becomes that statement's if nothing else comes first."""
        if self.borrowed is None:
            self.borrowed = (len(self.trace.moments) - 1, lender)

    # -- calls: stepped over when they wrote nothing -------------------------------------

    def opened(self, call: Frame) -> None:
        call.start, call.wrote = len(self.trace.moments), False
        self.calls.append(call)

    def closed(self, call: Frame) -> None:
        """A call returned: its moments go when none wrote a store (its reads are the calling
        statement's), unless the user steps into every call."""
        if call not in self.calls:
            return
        while self.calls.pop() is not call:
            pass
        if call.wrote or self.step_into or call.start is None:
            return
        for m in self.trace.moments[call.start :]:
            self.reads.update(m["reads"])
        del self.trace.moments[call.start :]
        if self.borrowed is not None and self.borrowed[0] >= call.start:
            self.borrowed = None

    @property
    def seen(self) -> int:
        """The moments the user sees: those of a call not known to write are not yet."""
        quiet = next((c for c in self.calls if not c.wrote), None)
        if quiet is None or quiet.start is None or self.step_into:
            return len(self.trace.moments)
        return quiet.start

    @property
    def full(self) -> bool:
        if len(self.trace.moments) - self.seen > MAX_MOMENTS:  # a long quiet call: let go
            quiet = next(c for c in self.calls if not c.wrote)
            for m in self.trace.moments[self.seen :]:
                self.reads.update(m["reads"])
            del self.trace.moments[self.seen :]
            for c in self.calls:
                if c.start is not None and c.start > len(self.trace.moments):
                    c.start = len(self.trace.moments)
            quiet.start = len(self.trace.moments)
        return self.seen >= MAX_MOMENTS

    # -- the stores --------------------------------------------------------------------

    def _stores(self, writes: set[str]) -> dict[str, Any]:
        """The loss, parameters, graph and optimizer state a moment shows: each drawn again only
        when the statement wrote it (or a name changed), else the last moment's very object
        (most statements of a loop: ``ix = …``, ``lr = …``; a forward writes the graph alone).
        A parameter's unchanged value and ``.grad`` are the last drawing (``Drawn``)."""
        watched = self.watched
        names = tuple(watched.named)
        last = self.last
        renamed = last is None or names != self.last_names
        if not writes and not renamed and last is not None:
            return last
        self.last_names = names
        params = "params" in writes or "grad" in writes or renamed or last is None
        state = "optimizer_state" in writes or renamed or last is None
        self.last = {
            "loss": watched.loss_value if "loss" in writes or last is None else last["loss"],
            # Drawn shares each unchanged value and .grad itself
            "params": self.drawn.params(watched) if params else last["params"],  # type: ignore[index]
            "graph": self._share("graph", watched.graph())
            if "graph" in writes or renamed or last is None
            else last["graph"],
            "optimizer_state": [
                self._share(f"s:{row['name']}", row)
                for row in stores.state_of(watched.optimizers, watched.named)
            ]
            if state
            else last["optimizer_state"],  # type: ignore[index]
        }
        return self.last

    def _share(self, key: str, part: Any) -> Any:
        """``part``, or the last moment's equal one: unchanged parts are one object."""
        kept = self.shared.get(key)
        if kept is not None and (kept is part or kept == part):
            return kept
        self.shared[key] = part
        return part
