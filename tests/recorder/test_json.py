"""A trace's JSON is its packed form (each distinct part once, moments as indices into it), read
back whole by ``Trace.from_json``; a trace's text is readable."""

from __future__ import annotations

import json
from typing import Any

import torch

from loop_stepper.recorder import Trace, record
from loop_stepper.recorder.trace import plain
from tests.recorder.loops import makemore

# makemore part 2's loop, small: a list of parameters, a hand-written update
MAKEMORE = makemore(embed=10, hidden=64, examples=200, iterations=20)
WORKED = """\
import torch
w = torch.tensor([1.0, -2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
for _ in range(3):
    loss = (w * w).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def whole(trace: Trace) -> str:
    """The JSON of every moment whole (``to_json`` before it was packed)."""
    return json.dumps(plain(trace.as_dict()), separators=(",", ":"), allow_nan=False)


def test_from_json_gives_every_moment_whole() -> None:
    trace = record(WORKED, iterations=2)
    text = trace.to_json()
    back = Trace.from_json(text)
    assert back.moments == trace.moments and len(back.moments) == 3 + 2 * 4
    assert (back.iterations, back.ended, back.stopped) == (2, "stopped", trace.stopped)
    assert back.start == trace.start and back.source == WORKED
    step = back.moments[-1]
    assert step["code"] == "opt.step()" and step["file"] is None
    w = torch.tensor([1.0, -2.0], requires_grad=True)  # plain PyTorch, the same two iterations
    opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    for _ in range(2):
        loss = (w * w).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert step["params"][0]["value"] == w.tolist()
    assert step["optimizer_state"][0]["state"]["momentum_buffer"] == (
        opt.state[w]["momentum_buffer"].tolist()
    )
    # a part the next statement did not change is one object, read back as one object
    zero, backward = back.moments[4], back.moments[5]
    assert (
        zero["code"] == "opt.zero_grad()"
        and zero["params"][0]["value"] is (backward["params"][0]["value"])
    )
    # the JSON of whole moments (older files) reads back the same
    assert Trace.from_json(whole(trace)).moments == trace.moments


def test_an_error_reads_back_with_where_it_was_raised() -> None:
    trace = record(WORKED.replace("    loss.backward()\n", "    loss.backward()\n" * 2))
    back = Trace.from_json(trace.to_json())
    assert back.error is not None and back.error == trace.error
    assert (back.error.type, back.error.line, back.error.code) == (
        "RuntimeError",
        8,
        "loss.backward()",
    )


def test_to_json_writes_each_distinct_part_once() -> None:
    trace = record(MAKEMORE, iterations=None)
    assert trace.iterations == 20
    text = trace.to_json()
    data = json.loads(text)
    refs: list[int] = []
    for m in data["moments"]:
        refs += [p["value"] for p in m["params"]] + [m["graph"]]
        refs += [p["grad"] for p in m["params"] if p["grad"] is not None]
        refs += [row["state"] for row in m["optimizer_state"]]
    assert sorted(set(refs)) == list(range(len(data["parts"])))  # every part used
    # a weight's view is written once per value it took: the first, then one per update of it
    weights = {p["value"] for m in data["moments"] for p in m["params"] if p["name"] == "W1"}
    updates = [m for m in trace.moments if m["code"] == "p.data += -0.1 * p.grad"]
    assert len(weights) == 1 + 20 == len({id(m["params"][1]["value"]) for m in updates})
    # far smaller than the moments whole: a moment costs what its statement changed
    assert len(text) * 8 < len(whole(trace))
    assert Trace.from_json(text).moments == trace.moments


def test_a_traces_text_is_readable() -> None:
    trace = record(WORKED, iterations=2)
    assert repr(trace) == (
        "<Trace: 11 moments of a cell of 8 lines, 2 iterations, stopped early, 0 diagnoses>"
    )
    done: Any = record("x = 1\n")
    assert (
        repr(done)
        == "<Trace: 1 moment of a cell of 1 line, 0 iterations, ran to its end, 0 diagnoses>"
    )
