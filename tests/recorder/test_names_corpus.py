"""Every script of the doctor's corpus recorded for 3 iterations, against plain PyTorch run to
the same point: the parameters the trace shows are the ones the loop trains, each under one
name that reaches it, and their values are plain PyTorch's, bit for bit.

The oracle is independent of the recorder: the script runs under ``exec`` with a trace function
of a few lines that stops it where the recording stopped (the start of the pass after the third
of the loop the recording names), and reads, at that point, what the script's frames hold:
every optimizer they reach and the tensors it holds, every leaf tensor that has a ``.grad`` (a
backward wrote it) and every one whose value changed since the loop's first pass began (a step
by hand). That union is the set of parameters trained; the shown names must resolve, in those
frames, to exactly that set, one tensor each.
"""

from __future__ import annotations

import ast
import contextlib
import io
import random
import re
import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from loop_stepper.recorder import Trace, record
from loop_stepper.stores import tensors

CORPUS = Path(__file__).resolve().parent.parent / "doctor" / "corpus"
SCRIPTS = sorted((CORPUS / "bugs").glob("[0-9]*.py")) + sorted(
    (CORPUS / "correct").glob("[0-9]*.py")
)
ITERATIONS = 3
TOKEN = re.compile(r"\.(\w+)|\[(\d+)\]|\[('[^']*'|\"[^\"]*\")\]")


class _Halt(BaseException):
    pass


def resolve(name: str, scopes: list[dict[str, Any]]) -> Any:
    """What ``name`` (``model.0.weight``, ``layers[3].gamma``, ``d['k']``) denotes in the first
    of ``scopes`` that holds its root; None when none does."""
    root = re.match(r"\w+", name)
    assert root is not None, name
    scope = next((s for s in scopes if root.group() in s), None)
    if scope is None:
        return None
    value = scope[root.group()]
    rest = name[root.end() :]
    for attr, index, key in TOKEN.findall(rest):
        if attr:
            value = getattr(value, attr)
        elif index:
            value = value[int(index)]
        else:
            value = value[ast.literal_eval(key)]
    assert "".join(m.group() for m in TOKEN.finditer(rest)) == rest, name
    return value


def reachable(scopes: list[dict[str, Any]]) -> Iterator[Any]:
    """Every object the scopes reach through modules, lists, dicts and plain objects."""
    seen: set[int] = set()
    stack: list[Any] = [v for s in scopes for k, v in s.items() if not k.startswith("__")]
    while stack:
        value = stack.pop()
        if id(value) in seen or isinstance(value, type | types.ModuleType | types.FunctionType):
            continue
        seen.add(id(value))
        yield value
        if isinstance(value, nn.Module):
            stack += list(value.parameters()) + list(value.modules())
        if isinstance(value, list | tuple | set):
            stack += list(value)[:10_000]
        elif isinstance(value, dict):
            stack += list(value.values())[:10_000]
        elif hasattr(value, "__dict__") and not isinstance(value, torch.Tensor):
            foreign = type(value).__module__.partition(".")[0] in ("torch", "numpy")
            if foreign and not isinstance(value, torch.optim.Optimizer | nn.Module):
                continue
            stack += list(vars(value).values())


def leaves(scopes: list[dict[str, Any]]) -> dict[int, torch.Tensor]:
    return {
        id(v): v
        for v in reachable(scopes)
        if isinstance(v, torch.Tensor) and v.is_leaf and v.requires_grad
    }


class Plain:
    """The script run plainly, stopped at the start of pass ``passes + 1`` of the loop whose
    header is at ``header`` (never, when None); what its frames hold there."""

    def __init__(self, source: str, filename: str, header: int | None, passes: int) -> None:
        self.source, self.filename, self.passes = source, filename, passes
        self.start = _first_body_line(source, header)
        self.count = 0
        self.offset: dict[types.CodeType, int] = {}
        self.scopes: list[dict[str, Any]] = []
        self.before: dict[int, torch.Tensor] = {}  # leaves' values as the first pass began

    def tracer(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != self.filename:
            return None
        if event == "line" and frame.f_lineno == self.start:
            first = self.offset.setdefault(frame.f_code, frame.f_lasti)
            if frame.f_lasti == first:  # a pass starts (not a with's exit on the same line)
                self.count += 1
                if self.count == 1:
                    self.before = {i: t.detach().clone() for i, t in leaves(_scopes(frame)).items()}
                if self.count == self.passes + 1:
                    self.scopes = _scopes(frame)
                    raise _Halt
        return self.tracer

    def run(self, space: dict[str, Any]) -> None:
        code = compile(self.source, self.filename, "exec")
        previous = sys.gettrace()
        sys.settrace(self.tracer)
        try:
            exec(code, space)
        except _Halt:
            return
        finally:
            sys.settrace(previous)
        self.scopes = [space]

    def trained(self) -> dict[int, torch.Tensor]:
        """Held by an optimizer, given a ``.grad``, or moved since the loop's first pass."""
        found = leaves(self.scopes)
        for value in reachable(self.scopes):
            if isinstance(value, torch.optim.Optimizer):
                for group in value.param_groups:
                    found |= {id(p): p for p in group["params"] if p.requires_grad}
        held = {id(p) for o in self._opts() for g in o.param_groups for p in g["params"]}
        trained = {
            i: t
            for i, t in found.items()
            if t.grad is not None
            or i in held
            or (i in self.before and not torch.equal(self.before[i], t.detach()))
        }
        # a list the loop updates by hand is trained whole, also an item its update left
        # equal (makemore part 4's b1: its gradient rounds away under batch norm)
        for value in reachable(self.scopes):
            if isinstance(value, list) and any(id(v) in trained for v in value):
                trained |= {id(v): v for v in value if id(v) in found}
        return trained

    def _opts(self) -> list[torch.optim.Optimizer]:
        return [v for v in reachable(self.scopes) if isinstance(v, torch.optim.Optimizer)]


def _scopes(frame: types.FrameType | None) -> list[dict[str, Any]]:
    """The locals of each frame of the script from ``frame`` out (innermost first)."""
    found: list[dict[str, Any]] = []
    filename = None if frame is None else frame.f_code.co_filename
    while frame is not None:
        if frame.f_code.co_filename == filename:
            found.append(dict(frame.f_locals))
        frame = frame.f_back
    return [s for s in found if s] or [{}]


def _first_body_line(source: str, header: int | None) -> int | None:
    if header is None:
        return None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.For | ast.While) and node.lineno == header:
            return node.body[0].lineno
    raise AssertionError(f"no loop at line {header}")


@contextlib.contextmanager
def quiet(tmp: Path) -> Iterator[None]:
    """One thread, no prints, no warnings, the script's files in ``tmp``; the grad mode and
    the thread count put back after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.chdir(tmp),
        ):
            warnings.simplefilter("ignore")
            yield
    finally:
        torch.set_num_threads(threads)
        torch.set_grad_enabled(True)


def seeded() -> None:
    torch.manual_seed(0)
    random.seed(0)


def recorded(script: Path, tmp: Path, iterations: int = ITERATIONS) -> tuple[Trace, dict[str, Any]]:
    space: dict[str, Any] = {"__name__": "__main__"}
    with quiet(tmp):
        seeded()
        trace = record(script.read_text(), space, iterations=iterations, filename=str(script))
    return trace, space


@pytest.mark.parametrize("script", SCRIPTS, ids=[f"{s.parent.name}/{s.stem}" for s in SCRIPTS])
def test_the_trace_shows_each_trained_parameter_once_at_plain_pytorchs_values(
    script: Path, tmp_path: Path
) -> None:
    trace, _ = recorded(script, tmp_path)
    iterations = ITERATIONS
    if trace.stopped is not None and "the most a trace holds" in trace.stopped:
        iterations = 1  # an LBFGS loop: 3 passes of its 10 closures hold more than 2,000 moments
        trace, _ = recorded(script, tmp_path, iterations)
    assert trace.moments, trace.error
    if trace.ended == "stopped":
        assert trace.stopped is not None
        match = re.search(r"iterations? of the loop at line (\d+)", trace.stopped)
        assert match is not None, trace.stopped
        header: int | None = int(match.group(1))
        assert trace.iterations == iterations
    else:
        header = None  # it ran to its end, or to the statement that raised
    ended: str = trace.ended
    plain = Plain(script.read_text(), str(script), header, iterations)
    space: dict[str, Any] = {"__name__": "__main__"}
    with quiet(tmp_path):
        seeded()
        if ended == "error":
            with pytest.raises(Exception) as raised:
                plain.run(space)
            assert str(raised.value) == str(trace.error)  # the same error, in its own words
            frames: list[dict[str, Any]] = []
            tb: types.TracebackType | None = raised.tb
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == str(script):
                    frames.append(dict(tb.tb_frame.f_locals))
                tb = tb.tb_next
            plain.scopes = [*reversed(frames), space]
        else:
            plain.run(space)
    last = trace.moments[-1]["params"]
    names = [p["name"] for p in last]
    assert len(names) == len(set(names))
    denoted = {p["name"]: resolve(p["name"], plain.scopes) for p in last}
    shown = {id(t): t for t in denoted.values() if t is not None}
    assert len(shown) == len([t for t in denoted.values() if t is not None])  # one tensor a name
    trained = plain.trained()
    if ended == "error":  # its frames are gone: what the names reach is all we have
        assert set(shown) <= set(trained) and shown, names
    else:
        assert all(t is not None for t in denoted.values()), denoted
        assert set(shown) == set(trained), (names, len(trained))
    for p in last:  # bit for bit (repr: NaN is NaN): the drawn value is plain PyTorch's own
        value = denoted[p["name"]]
        if value is not None:
            assert repr(p["value"]) == repr(tensors.shown(value)), p["name"]
            if ended != "error":  # a backward that raised may have added in some grads
                grad = None if value.grad is None else tensors.shown(value.grad)
                assert repr(p["grad"]) == repr(grad), p["name"]
