"""A parameter's numbers taken through ``.data`` (a tensor with no graph) and put into the loss:

- a term computed from them added to a loss (``loss + 0.01 * (w.data ** 2).sum()``): the loss's
  value has the term and its gradient does not, so the penalty penalizes nothing
  (``loss_from_data``, named at the statement that adds it);
- a parameter the forward uses only through its ``.data`` (``x @ w.data + b``): it gets no
  gradient at the backward (``no_gradient``, named at the statement that read it).

Heard: ``.data`` of a leaf that requires grad, read by the user's code with autograd on. From
that read to the end of its statement (the next line the frame that made the call runs),
PyTorch's torch-function mode follows what is computed from those numbers: a result of them is
followed in turn; one used with a tensor of the graph is joined in. The next backward tells
which it was, by the parameter's gradient: none, the parameter was used only through its
``.data``; some, and the number was added to a one-number tensor, a loss's term. At most
``WINDOWS`` reads are followed per statement: a loop pays for its first iterations only, and
nothing when a debugger, coverage or the recorder traces (the statement's end could not be
heard).
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from loop_stepper.doctor import where
from loop_stepper.doctor.chart import Chart
from loop_stepper.doctor.where import Place
from loop_stepper.recorder.probe import guarded

WINDOWS = 2  # reads followed per statement
OPS = 10_000  # calls followed in one window at most
_JOINS = {"add", "sub", "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__"}
_PACKAGE = os.path.dirname(os.path.dirname(__file__)) + os.sep  # loop_stepper/


@dataclass(frozen=True)
class Joined:
    param: torch.Tensor
    read_at: Place
    at: Place  # the statement that joined it to a tensor of the graph
    term: float | None  # added as one number to a one-number tensor (a loss's term): its value


class DotData:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.windows: dict[Place, int] = {}
        self.followed: dict[int, tuple[torch.Tensor, torch.Tensor, Place]] = {}
        self.joined: list[Joined] = []
        self.mode: _Follow | None = None
        self.ended: list[_Follow] = []  # windows' modes ended, to take off PyTorch's stack
        self.enders: list[types.FrameType] = []
        self.ops = 0
        self.saw = guarded(doctor, "data_follow", self._saw)
        self.line = guarded(doctor, "data_line", self._line)

    def close(self) -> None:
        self._end()
        self._settle()
        self.joined.clear()

    def data_read(self, tensor: torch.Tensor, data: torch.Tensor) -> None:
        self._settle()
        if (self.mode is None and sys.gettrace() is not None) or not torch.is_grad_enabled():
            return
        caller = _caller()
        if caller is None or not where.is_theirs(caller.f_code.co_filename):
            return
        at: Place = (caller.f_code.co_filename, caller.f_lineno)
        if self.mode is None:
            if self.windows.get(at, 0) >= WINDOWS:
                return
            self.windows[at] = self.windows.get(at, 0) + 1
            self._begin(caller)
        self.followed[id(data)] = (data, tensor, at)

    def before_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        self._end()
        self._settle()

    def after_backward(self, roots: Sequence[torch.Tensor], retain_graph: bool) -> None:
        """The joins since the last backward, judged by the parameter's gradient now."""
        joined, self.joined = self.joined, []
        doctor = self.doctor
        unreached: dict[Place, list[torch.Tensor]] = {}
        for j in joined:
            if j.param.grad is None:
                params = unreached.setdefault(j.read_at, [])
                if all(p is not j.param for p in params):
                    params.append(j.param)
            elif j.term is not None:
                evidence = {"param": doctor.names([j.param])[0], "term": j.term}
                doctor.name("loss_from_data", j.at, evidence)
        went = " (only its .data, which has no graph, was used at this statement)"
        for at, params in unreached.items():
            doctor.name("no_gradient", at, {"params": doctor.names(params), "went": went})

    # -- the window of a read --------------------------------------------------------------

    def _begin(self, caller: types.FrameType) -> None:
        """Follow from now to the end of the statement: the next line of the frame that called
        ``caller`` when it is the user's too (a helper's read joins in its caller's statement),
        else of ``caller``'s own."""
        back = caller.f_back
        theirs = back is not None and where.is_theirs(back.f_code.co_filename)
        self.enders = [back] if back is not None and theirs else [caller]
        self.ops = 0
        self.mode = _Follow(self.saw)
        self.mode.__enter__()  # type: ignore[no-untyped-call]
        sys.settrace(_nothing)
        for frame in self.enders:
            frame.f_trace = self.line

    def _end(self) -> None:
        mode, self.mode = self.mode, None
        if mode is None:
            return
        mode.on = False
        self.ended.append(mode)
        self._settle()
        if sys.gettrace() is _nothing:
            sys.settrace(None)
        for frame in self.enders:
            frame.f_trace = None
        self.enders = []
        self.followed.clear()

    def _settle(self) -> None:
        """Take the windows' modes that ended off PyTorch's stack, from its top, once no handler
        of theirs runs: inside one, PyTorch has popped it for the call and pushes it back after
        (a window that ends there, at its calls' cap, is taken off at the next event)."""
        if _Follow.running:
            return
        stack = torch.overrides._get_current_function_mode_stack()  # type: ignore[no-untyped-call]
        while self.ended and stack and stack[-1] in self.ended:
            mode = stack.pop()
            self.ended.remove(mode)
            mode.__exit__(None, None, None)

    def _line(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event in ("line", "return"):
            self._end()
            return None
        return self.line

    def _saw(self, func: Any, args: Any, kwargs: Any, out: Any) -> None:
        self.ops += 1
        if self.ops > OPS:
            self._end()
            return
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        followed = [self.followed[id(t)] for t in tensors if id(t) in self.followed]
        if not followed:
            return
        _, param, read_at = followed[0]
        graph = [t for t in tensors if id(t) not in self.followed and t.requires_grad]
        if graph:
            term = followed[0][0]
            added = getattr(func, "__name__", "") in _JOINS
            one = added and term.numel() == 1 and graph[0].numel() == 1  # a term of a loss
            value = float(term.detach()) if one else None
            self.joined.append(Joined(param, read_at, where.place(2), value))
            return
        if isinstance(out, torch.Tensor) and out.is_floating_point() and not out.requires_grad:
            self.followed[id(out)] = (out, param, read_at)


class _Follow(TorchFunctionMode):
    running = 0  # handlers of this class running now (PyTorch pops a mode while its own runs)

    def __init__(self, saw: Any) -> None:
        super().__init__()
        self.saw = saw
        self.on = True

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        _Follow.running += 1
        try:
            out = func(*args, **kwargs)
            if self.on:
                self.saw(func, args, kwargs, out)
        finally:
            _Follow.running -= 1
        return out


def _nothing(frame: types.FrameType, event: str, arg: Any) -> None:
    """The global trace function of a window: new frames are not traced."""
    return None


def _caller() -> types.FrameType | None:
    """The frame that read ``.data``: the first outside this package."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return frame
