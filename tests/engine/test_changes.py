"""``changes.py`` on a Lab's own Sessions: what an answer leaves out against the one held (by
marks, as the server answers; by value, as a lecture's events are compared), NaN, the answers
a session keeps and what they hold."""

from __future__ import annotations

import copy
import gc
import math
from typing import Any, cast

import torch

from app.engine import Lab
from app.engine.changes import (
    KEPT,
    STORES,
    WHOLE,
    Answers,
    by_marks,
    changed,
    marks,
    without,
)
from app.engine.optimizers import OptimizerSpec
from app.engine.setup import Setup
from app.engine.views import SessionView
from support.held import restore

LINES = [
    ("forward", {"graph", "buffers"}),  # BatchNorm's running statistics in train mode
    ("loss", {"graph"}),
    ("backward", {"grad", "graph"}),
    ("step", {"params", "optimizer_state"}),
    ("zero_grad", {"grad"}),
]


def lab() -> Lab:
    return Lab(Setup("moons", 0.3, 0, OptimizerSpec("sgd", momentum=0.9), batchnorm=True))


def test_a_line_leaves_out_what_it_did_not_write_by_marks_and_by_value() -> None:
    moons = lab()
    held = moons.view()
    held_marks = marks(moons, held)
    for line, written in LINES:
        moons.run_line(line)
        now = moons.view()
        for answer in (without(now, by_marks(marks(moons, now), held_marks)), changed(now, held)):
            shown = cast(dict[str, Any], answer)
            assert set(STORES) - set(shown["unchanged"]) - {"spec", "lesson"} == written, line
            assert not set(shown["unchanged"]) & set(WHOLE) & shown.keys()  # left out
            # moons' tensors are sent exactly: an entry, when sent, carries both its fields
            assert ("params" in shown) == bool(written & {"params", "grad"})
            assert restore(shown, cast(dict[str, Any], held)) == now
        held, held_marks = now, marks(moons, now)


def test_a_nan_is_left_out_only_when_it_did_not_change() -> None:
    moons = lab()
    before = moons.view()
    before_marks = marks(moons, before)
    with torch.no_grad():
        moons.named["0.weight"][0, 0] = math.nan
    after = moons.view()
    after_marks = marks(moons, after)
    sent = cast(dict[str, Any], without(after, by_marks(after_marks, before_marks)))
    assert "params" not in sent["unchanged"] and "value" in sent["params"][0]
    # marks are the bytes: the same NaN is the same bytes, left out as unchanged
    again = by_marks(marks(moons, moons.view()), after_marks)
    assert again.values is not None and all(again.values)
    # by value, a NaN is not equal to itself: never left out
    apart = cast(SessionView, {**after, "params": copy.deepcopy(after["params"])})
    cast(dict[str, Any], apart)["params"][0]["value"][0][0] = float("nan")
    assert "params" not in cast(dict[str, Any], changed(apart, after))["unchanged"]


def test_answers_keep_the_newest_few_and_know_no_other_sessions() -> None:
    moons = lab()
    answers, other = Answers(), Answers()
    view = moons.view()

    def mark() -> dict[str, Any]:
        return marks(moons, view)

    assert answers.answer(view, mark, None) == view  # no held: the Session itself
    versions = [answers.answer(view, mark, "none")["version"] for _ in range(KEPT + 1)]
    assert len(set(versions)) == KEPT + 1
    oldest, newest = versions[0], versions[-1]
    assert "unchanged" not in answers.answer(view, mark, oldest)  # no longer kept
    assert "unchanged" in answers.answer(view, mark, newest)
    assert "unchanged" not in other.answer(view, mark, newest)
    assert other.answer(view, mark, "none")["version"].split(".")[0] != newest.split(".")[0]


def test_the_marks_an_answer_keeps_are_nothing_the_collector_walks() -> None:
    """Tensors as bytes, not lists of numbers: 300 sessions' kept answers as Python lists made
    the collector's full collections 5 times slower under a class."""
    moons = lab()
    moons.run(1)
    kept = marks(moons, moons.view())
    gc.collect()  # a tuple of bytes is untracked once the collector has seen it: nested ones
    gc.collect()  # once it has seen them untracked inside
    for store in ("params", "grad", "optimizer_state", "buffers"):
        assert not gc.is_tracked(kept[store]), store
