"""A session as the log of what was done to it: any past moment is a replay of that log.

The Lab is the live model; a Timeline drives it and writes down each action (a line, an lr or a
program change) as an Event. PyTorch on the CPU is deterministic, so replaying the log from the
start gives the same numbers bit for bit, and rebuilds the real autograd graph too.

A **moment** is the state right after a line that ran; moment 0 is the start (creation or the
last reset). Replays start from the newest keyframe that serves the moment (app/log/replays.py)
instead of the start.

Imports the engine only; the database is reached through the narrow ``KeyframeSource`` protocol.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from app.engine import Lab, LabState, LineError
from app.engine.changes import Answers
from app.engine.entries import ENTRIES
from app.engine.lessons import walk_view
from app.engine.views import SessionView
from app.log.records import AT_END, Change, Event, KeyframeSource, Saved, Setup
from app.log.replays import Keyframe, Keyframes, LossPoints

KEEP_MOMENTS = 10_000  # moments a timeline keeps; older ones can no longer be reached
KEYFRAME_EVERY = 10  # events between keyframes: a rewind replays 5 lines on average
SAVE_EVERY = 250  # lines of a run between its writes (see run)
RUN_SPACING = 5  # a run's keyframes are this many times further apart (see run)


class TimelineError(Exception):
    """An action on the timeline that cannot be done now (the HTTP layer answers 409)."""


class MomentOutOfRange(ValueError):
    """A rewind to a moment that does not exist, or is no longer kept (a 422)."""


class Timeline:
    """The live Lab plus the log that made it; every action goes through here."""

    def __init__(
        self,
        setup: Setup,
        journal: KeyframeSource | None = None,
        *,
        keep: int = KEEP_MOMENTS,
        every: int = KEYFRAME_EVERY,
        offset: int = 0,
    ) -> None:
        self.setup, self.journal, self.keep, self.every = setup, journal, keep, every
        self.offset = offset  # the first keyframe waits this many more events: a class staggered
        self._spacing = every  # events between keyframes now (wider during a run)
        self.lab = Lab(setup)
        self._spare: Lab | None = None  # the scratch copy's Lab, built once (see scratch)
        self._start(self.lab.initial)  # the same moment (never changed, so shared)
        self.change = Change()
        self.answers = Answers()  # what its clients may hold (changes.py)

    @classmethod
    def restored(cls, saved: Saved, journal: KeyframeSource, offset: int = 0) -> Timeline:
        """A timeline read back from the database, standing where it stood (its head)."""
        timeline = cls(saved.setup, journal, offset=offset)
        timeline.events = list(saved.events)
        timeline.first, timeline.dropped = saved.first, saved.dropped
        numbered = list(enumerate(timeline.events, start=saved.first))
        timeline.lines = [seq for seq, e in numbered if e.moment]
        kept = [(seq, e.point) for seq, e in numbered if e.point is not None]
        timeline.points = LossPoints(saved.base_points, kept)
        if saved.first > 0:
            del timeline.keyframes[-1]
        for seq, clean in saved.keyframes:
            timeline.keyframes[seq] = Keyframe(clean, None)
        # the Lab is fresh, at the start: with the start's keyframe kept, a replay may go on
        # from there with no restore (a started session's build: half its time went on it)
        timeline._stale = saved.first > 0
        end = saved.first + len(saved.events) - 1
        timeline._goto(end if saved.head == AT_END else saved.head)
        timeline._saved_at_end = timeline.head == end
        timeline.change = Change()
        return timeline

    def _start(self, start: LabState | None = None) -> None:
        self.events: list[Event] = []
        self.first = 0  # the sequence number of events[0]
        self.head = -1  # the sequence number of the last event the Lab has applied
        self.lines: list[int] = []  # the sequence number of each kept moment's line
        self.dropped = 0  # moments forgotten: their lines are before the first kept event
        self.points = LossPoints()
        state = self.lab.capture() if start is None else start
        self.keyframes = Keyframes({-1: Keyframe(True, state)})
        self._stale = False  # True while the Lab is not at the head
        self._restored = -1  # the keyframe the Lab was last restored from (see _line)
        self._saved_at_end = True  # the database's head is "the newest event"
        self.save: Callable[[], None] = lambda: None  # its owner's write (app/sessions/live.py)

    # -- the actions -----------------------------------------------------------------

    def line(self, entry: str) -> None:
        """Run one program entry out of order (the cursor stays)."""
        self._line(entry, advance=False)

    def next(self) -> None:
        """Run the line at the cursor; the cursor moves on."""
        self._line(self.lab.next_line, advance=True)

    def run(self, iterations: int, pause: Callable[[], None] = lambda: None) -> None:
        """Lines until the cursor has wrapped ``iterations`` times; a failing line stops it.
        ``pause`` is called before each line (the web layer lets light work go first), ``save``
        every ``SAVE_EVERY`` lines."""
        lines = 0
        # a keyframe every 50 events, not 10: a quarter of a run's time went to taking and
        # writing keyframes, and a rewind into a run replays 25 lines on average (about 5 ms)
        self._spacing = self.every * RUN_SPACING
        try:
            for _ in range(iterations):
                while True:
                    pause()
                    self.next()
                    lines += 1
                    if lines % SAVE_EVERY == 0:
                        # written as it goes: 5000 events at once held SQLite's one writer (and
                        # every click waiting to write its line) for 15 ms, after 50 ms encoding
                        self.save()
                    if self.lab.cursor == 0:
                        break
        finally:
            self._spacing = self.every

    def set_lr(self, lr: float) -> None:
        self._cut()
        self.lab.lr = lr
        self._record(Event("lr", lr=lr))

    def set_max_norm(self, max_norm: float) -> None:
        self._cut()
        self.lab.max_norm = max_norm
        self._record(Event("max_norm", max_norm=max_norm))

    def set_program(self, program: list[str]) -> None:
        self._cut()
        self.lab.set_program(program)
        self._record(Event("program", program=tuple(self.lab.program)))

    def reset(self) -> None:
        """A new start: the initial parameters with today's lr and program; no past."""
        self.lab.reset()
        lab = self.lab
        self.setup = replace(
            self.setup, lr=lab.lr, max_norm=lab.max_norm, program=tuple(lab.program)
        )
        self._start()
        self.change = Change(rebased=self.setup)

    def rewind(self, n: int) -> None:
        """The Lab exactly as it was right after moment ``n``'s line (0: the start)."""
        if not self.first_moment <= n <= self.moments:
            if 0 <= n < self.first_moment:
                raise MomentOutOfRange(
                    f"moment {n} is no longer kept: a timeline keeps the newest {self.keep} "
                    f"moments, here {self.first_moment} to {self.moments}"
                )
            raise MomentOutOfRange(
                f"moment {n} does not exist: this timeline has moments "
                f"{self.first_moment} to {self.moments}"
            )
        self._goto(self._seq_of(n))
        at_end = self.head == self.first + len(self.events) - 1
        self.change.head = AT_END if at_end else self.head
        self._saved_at_end = at_end

    def back(self) -> None:
        if self.moment <= self.first_moment:
            raise TimelineError(
                "already at the start: there is no earlier moment to go back to"
                if self.moment == 0
                else f"moment {self.moment} is the oldest one kept"
            )
        self.rewind(self.moment - 1)

    # -- reading -------------------------------------------------------------------

    @property
    def moments(self) -> int:
        """The newest moment: how many lines have run since the start."""
        return self.dropped + len(self.lines)

    @property
    def moment(self) -> int:
        return self.dropped + bisect.bisect_right(self.lines, self.head)

    @property
    def first_moment(self) -> int:
        """The oldest moment that can still be reached."""
        return self.dropped + 1 if self.first > 0 else 0

    def summary(self) -> list[dict[str, Any]]:
        """Every kept moment: its line, iteration and the loss after it, for a slider."""
        rows: list[dict[str, Any]] = []
        if self.first == 0:
            rows.append({"n": 0, "line": None, "iteration": 0, "loss": None, "predicted": None})
        for i, seq in enumerate(self.lines, start=self.dropped + 1):
            e = self.events[seq - self.first]
            before = self.events[seq - 1 - self.first] if seq > self.first else None
            # a prediction is kept right before the line it is about: right or wrong, or none
            said = before.prediction if before is not None and before.op == "predict" else None
            predicted = None if said is None else bool(said["correct"])
            row = {"n": i, "line": e.entry, "iteration": e.iteration, "loss": e.loss}
            rows.append({**row, "predicted": predicted})
        return rows

    def log(self) -> tuple[Setup, list[Event]]:
        """The setup and the events up to the current moment (not the ones stepped back over)."""
        if self.first > 0:
            raise TimelineError("older moments are no longer kept, so the log is incomplete")
        return self.setup, self.events[: self.head + 1 - self.first]

    def view(self, since: int = 0) -> SessionView:
        view: SessionView = {**self.lab.view(since), "moment": self.moment, "moments": self.moments}
        if self.setup.lesson is not None:  # a session on a lesson: the stop standing here
            view["lesson"] = walk_view(self.setup.lesson, self.moment)
        return view

    def scratch(self, upto: int | None = None) -> tuple[Lab, list[tuple[int, Event]]]:
        """A Lab of its own, restored from the newest keyframe that reaches the head exactly
        (and, with ``upto``, is not after event ``upto``), and the numbered events that bring it
        to the head when each is redone in order (``Event.redo``). The live Lab is not touched:
        what runs on the copy (a prediction's truth, an explanation's replay) changes nothing."""
        head = self.head
        limit = head if upto is None else min(upto, head)
        before = (s for s in self.keyframes if (s < head or s == self.first - 1) and s <= limit)
        seq = max(s for s in before if self._usable(s, head))
        state = self.keyframes.state(seq, self.journal)
        # one Lab per timeline, restored whole each time (as a rewind restores the live one):
        # building a model again costs more than the replay
        lab = self._spare = self._spare or Lab(self.setup)
        lab.restore(state, whole=True)
        return lab, [(n, self.events[n - self.first]) for n in range(seq + 1, head + 1)]

    def moment_of(self, seq: int) -> int:
        """The moment right after event ``seq``."""
        return self.dropped + bisect.bisect_right(self.lines, seq)

    def predicted(self, event: Event) -> None:
        """Keep a prediction in the log, right before the line it is about: acting from a past
        moment discards it with the moments after it, like any event."""
        self._cut()
        self._record(event)

    def drain(self) -> Change:
        """What changed since the last drain; the caller writes it to the database."""
        change, self.change = self.change, Change()
        return change

    # -- inside ----------------------------------------------------------------------

    def _line(self, entry: str, advance: bool) -> None:
        # a rewind restored a keyframe whose stand-in loss this line would use as the real
        # one (running_loss += loss keeps its graph): replay from one that has the real loss
        # (none left that has: a log that forgot where its loss came from keeps the stand-in)
        if not self._lab_usable(self.head, entry) and any(
            s < self.head and self._usable(s, self.head, entry) for s in self.keyframes
        ):
            self._stale = True
            self._goto(self.head, entry)
        # the moments after a past one go only once the line has done something: a line the
        # Lab refuses (loss before any forward) changes nothing, so it discards nothing
        if ENTRIES[entry].method == "forward":
            self._cut()
            newest = max(self.keyframes)
            if self.head - newest >= self._spacing + (self.offset if newest < 0 else 0):
                self._keyframe()
        try:
            if advance:
                self.lab.next()
            else:
                self.lab.run_line(entry)
        except LineError as error:
            if error.torch_error:  # PyTorch may have changed the graph: it is part of the log
                self._cut()
                self._record(
                    Event("line", entry=entry, advance=advance, ok=False, error=str(error))
                )
            raise
        self._cut()
        lab = self.lab
        point = lab.history[-1] if ENTRIES[entry].method == "loss" else None
        if point is not None:
            self._restored = -1  # a real loss from here on: no stand-in left to check for
        self._record(
            Event(
                "line",
                entry=entry,
                advance=advance,
                iteration=lab.iteration,
                loss=lab.loss_value,
                point=point,
            )
        )

    def _record(self, event: Event) -> None:
        self.head += 1
        self.events.append(event)
        if event.moment:
            self.lines.append(self.head)
        if event.point is not None:
            self.points.add(self.head, event.point)
        self.change.events.append((self.head, event))
        if not self._saved_at_end:
            self.change.head, self._saved_at_end = AT_END, True
        if len(self.lines) > self.keep + self.every * 5:
            self._forget()

    def _cut(self) -> None:
        """Acting from a past moment discards the moments after it."""
        end = self.first + len(self.events) - 1
        if self.head == end:
            return
        del self.events[self.head + 1 - self.first :]
        del self.lines[bisect.bisect_right(self.lines, self.head) :]
        self.points.cut(self.head)
        self.keyframes.cut(self.head)
        # what this change was still to write past the head is gone too (a drain may span
        # several actions: the database applies the truncation before the events)
        change = self.change
        change.events = [(seq, e) for seq, e in change.events if seq <= self.head]
        change.keyframes = [k for k in change.keyframes if k[0] < self.head]
        cut = self.head + 1
        change.truncate = cut if change.truncate is None else min(change.truncate, cut)

    def _keyframe(self) -> None:
        if not self.lab.running.exact:
            return  # its graphs cannot be captured: such a state is never a keyframe
        state = self.lab.capture(history=False)  # rebuilt from the loss points on restore
        assert state.exact
        clean = state.loss_spent or self.lab.loss_tensor is None
        stored = self.journal is not None  # the database has them all
        self.keyframes.add(self.head, clean, state, base=self.first - 1, stored=stored)
        self.change.keyframes.append((self.head, clean, state))

    def _usable(self, seq: int, target: int, then: str | None = None) -> bool:
        """Whether replaying from the keyframe at ``seq`` reaches ``target`` exactly (and
        leaves the Lab right for the line ``then``, about to run)."""
        events = self.events[seq + 1 - self.first : target + 1 - self.first]
        lines = [(e.entry, e.ok) for e in events if e.op == "line"]
        return self.keyframes.serves(seq, lines, then)

    def _lab_usable(self, target: int, then: str | None = None) -> bool:
        """Whether the Lab may go on from where it is to ``target``: not if a rewind left it on
        a keyframe's stand-in loss that the way there (or ``then``) would use."""
        restored = self._restored
        return not (
            0 <= restored <= self.head
            and restored in self.keyframes
            and not self._usable(restored, target, then)
        )

    def _goto(self, target: int, then: str | None = None) -> None:
        usable = [s for s in self.keyframes if s < target and self._usable(s, target, then)]
        seq = max(usable) if target >= 0 else -1  # the newest that serves the target
        if not self._stale and seq <= self.head <= target and self._lab_usable(target, then):
            # forward, from where the Lab is
            self._replay(self.head + 1, target)
            return
        state = self.keyframes.state(seq, self.journal)
        state.history = self.points.until(seq)
        self.lab.restore(state, whole=True)
        state.history = []
        self._stale = False
        self._restored = seq
        self._replay(seq + 1, target)

    def _replay(self, start: int, end: int) -> None:
        for e in self.events[start - self.first : end + 1 - self.first]:
            e.redo(self.lab)
        self.head = end

    def _seq_of(self, n: int) -> int:
        return -1 if n == 0 else self.lines[n - self.dropped - 1]

    def _forget(self) -> None:
        """Keep the newest ``keep`` moments: the log starts again at a clean keyframe."""
        newest_gone = self.lines[-self.keep - 1]
        base = self.keyframes.base_before(newest_gone)
        if base is None:
            return  # no clean keyframe yet (a loop without backward): keep everything
        self.points.forget_before(base)
        gone = bisect.bisect_right(self.lines, base)
        del self.lines[:gone]
        self.dropped += gone
        del self.events[: base + 1 - self.first]
        self.first = base + 1
        self.keyframes.forget_before(base)
        self.change.forget_before = self.first
        self.change.dropped, self.change.base_points = self.dropped, list(self.points.base)
