"""The statement that stores a reference, found by what happened: the user's lines are traced
until a holder the doctor suspects (``holders.py``) changes to hold a graph again, and the
line that ran then is the one named.

A line event comes before its line runs: a change seen at one is the work of the line the
frame ran before (or of a call it made to code not the user's, ``list.append``); one seen when
a frame returns, of that frame's last line; one seen when a function of the user's is called,
of the line that called it. Each look reads the holders only (a name, an attribute, a length),
never a tensor's numbers.

Tracing costs: it runs only from a suspicion to the next store (at most ``WINDOW`` backwards),
once per holder, and only when nothing else traces (a debugger, coverage, the recorder): then
the line is found from the code instead (``fallback``).
"""

from __future__ import annotations

import dis
import sys
import types
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from loop_stepper.doctor import where
from loop_stepper.doctor.holders import Keeper
from loop_stepper.doctor.where import Place
from loop_stepper.recorder.observer import Observer
from loop_stepper.recorder.probe import guarded

WINDOW = 3  # backwards a suspicion is traced for before its line is found from the code
MUTATORS = {"append", "extend", "insert", "appendleft", "add", "update", "__setitem__"}
Found = Callable[[Keeper, Place], None]


def state(value: Any) -> tuple[Any, ...]:
    """What a look compares: identity, an in-place change (``total_loss += loss`` on a tensor
    adds into it), the graph's newest node, a container's length."""
    if isinstance(value, torch.Tensor):
        return id(value), value._version, id(value.grad_fn)
    if isinstance(value, list | tuple | deque | dict):
        return id(value), len(value)
    return (id(value),)


def holds_graph(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.grad_fn is not None
    if isinstance(value, list | tuple | deque) and len(value):
        last = value[-1]
        return isinstance(last, torch.Tensor) and last.grad_fn is not None
    return False


class Lookout:
    def __init__(self, owner: Observer, found: Found) -> None:
        self.found = found
        # the tracers, as hooks of the doctor's: an error of theirs turns the doctor off
        self.tracer = guarded(owner, "lookout", self._call)
        self.local = guarded(owner, "lookout", self._local)
        self.watched: dict[tuple[Any, ...], tuple[Keeper, tuple[Any, ...], int]] = {}
        self.lines: dict[int, int] = {}  # a traced frame's id -> the line it ran last
        self.frames: list[types.FrameType] = []  # frames given a local tracer
        self.tracing = False

    def watch(self, holder: Keeper, value: Any) -> None:
        """Trace until ``holder`` changes, else find its line from the code."""
        if holder.key in self.watched:
            return
        if not self.tracing and sys.gettrace() is not None:
            self.found(holder, fallback(holder))
            return
        self.watched[holder.key] = (holder, state(value), 0)
        if not self.tracing:
            self.tracing = True
            sys.settrace(self.tracer)
            for frame in where.their_frames(1):
                frame.f_trace = self.local
                self.frames.append(frame)
                self.lines[id(frame)] = frame.f_lineno

    def backward(self) -> None:
        """A backward ran: suspicions watched for ``WINDOW`` of them get their line from the
        code."""
        for key, (holder, before, seen) in list(self.watched.items()):
            if seen + 1 >= WINDOW:
                del self.watched[key]
                self.found(holder, fallback(holder))
            else:
                self.watched[key] = (holder, before, seen + 1)
        if not self.watched:
            self.stop()

    def close(self) -> None:
        for holder, _, _ in list(self.watched.values()):
            self.found(holder, fallback(holder))
        self.watched.clear()
        self.stop()

    def stop(self) -> None:
        if self.tracing:
            if sys.gettrace() is self.tracer:
                sys.settrace(None)
            for frame in self.frames:
                frame.f_trace = None
            self.frames.clear()
            self.lines.clear()
            self.tracing = False

    # -- the tracer ------------------------------------------------------------------------

    def _call(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if not self.tracing or not where.is_theirs(frame.f_code.co_filename):
            return None
        caller = frame.f_back
        while caller is not None and not where.is_theirs(caller.f_code.co_filename):
            caller = caller.f_back
        if caller is not None:
            self._look((caller.f_code.co_filename, caller.f_lineno))
        self.lines[id(frame)] = frame.f_lineno
        return self.local

    def _local(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if not self.tracing:
            return None
        if event == "line":
            ran = self.lines.get(id(frame))
            if ran is not None:
                self._look((frame.f_code.co_filename, ran))
            self.lines[id(frame)] = frame.f_lineno
        elif event == "return":
            self._look((frame.f_code.co_filename, frame.f_lineno))
            self.lines.pop(id(frame), None)
        return self.local

    def _look(self, ran: Place) -> None:
        for key, (holder, before, _) in list(self.watched.items()):
            try:
                now = holder.get()
            except Exception:  # a frame gone, a property that raises: not this holder
                continue
            if state(now) != before:
                if holds_graph(now):
                    del self.watched[key]
                    self.found(holder, ran)
                else:
                    self.watched[key] = (holder, state(now), self.watched[key][2])
        if not self.watched:
            self.stop()


def fallback(holder: Keeper) -> Place:
    """The line found from the code: in the holder's frame's code (a name) or its class's
    methods (an attribute), the store or the call of a list's method on it nearest the line the
    frame runs now; else that line."""
    frame = holder.frame
    if frame is None:
        return None, None
    here: Place = (frame.f_code.co_filename, frame.f_lineno)
    attribute = holder.key[1] if holder.kind is not None else None
    if holder.kind is not None:
        codes = [
            f.__code__
            for f in vars(holder.kind).values()
            if isinstance(f, types.FunctionType) and f.__name__ != "__init__"
        ]
    else:
        codes = [frame.f_code]
    found: list[Place] = []
    for code in codes:
        found.extend((code.co_filename, line) for line in _stores(code, holder.key[1], attribute))
    if not found:
        return here
    same = [p for p in found if p[0] == here[0]] or found
    return min(same, key=lambda p: abs((p[1] or 0) - (here[1] or 0)))


def _stores(code: types.CodeType, name: str, attribute: str | None) -> list[int]:
    """The lines of ``code`` that store ``name`` (an attribute's when ``attribute``) or call a
    mutating method on it."""
    lines: list[int] = []
    previous: dis.Instruction | None = None
    for ins in dis.get_instructions(code):
        line = ins.positions.lineno if ins.positions else None
        target = ins.argval == name
        store = (
            ins.opname == "STORE_ATTR"
            if attribute is not None
            else ins.opname.startswith("STORE_") and ins.opname != "STORE_ATTR"
        )
        mutate = (
            ins.opname in ("LOAD_METHOD", "LOAD_ATTR")
            and ins.argval in MUTATORS
            and previous is not None
            and previous.argval == name
        )
        if line is not None and ((target and store) or mutate):
            lines.append(line)
        previous = ins
    return lines
