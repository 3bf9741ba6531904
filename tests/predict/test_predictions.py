"""Predict first on the timeline, for random programs on every scenario: the question changes
nothing, its true choice is what the line then does (read off a twin that runs it with next),
predict marks exactly that choice (or set) right, and leaves the session as next leaves it."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import Lab, LineError
from app.engine.entries import ENTRIES
from app.engine.optimizers import OptimizerSpec
from app.engine.program import PRESETS
from app.engine.questions import Question, verdict
from app.log.records import Setup
from app.log.timeline import Timeline
from app.predict import predictions
from app.torchlock import with_rng
from tests.log.test_timeline import EXTRAS, MOONS_EXTRAS, NEURON_EXTRAS, OPTIMIZERS, answer, setup

SID = "a-session"


def element(lab: Lab, name: str, index: int) -> float | None:
    grad = lab.named[name].grad
    return None if grad is None else grad.flatten()[index].item()


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def loss_on(lab: Lab, seen: dict[str, Any]) -> float:
    """The loss line's value on the batch of the last forward (same mode and dropout draws),
    with the parameters the Lab holds now, on a copy of its model (plain PyTorch)."""
    model = copy.deepcopy(lab.model)
    model.train(seen["training"])
    with lab.amp.autocast(), torch.no_grad():
        x = seen["x"]
        drawn = seen["rng"] is not None and seen["training"]
        out = with_rng(model, x, seen["rng"])[0] if drawn else model(x)
        out = out.softmax(dim=1) if lab.setup.softmax_before_loss else out
        loss = lab.loss_fn(out, seen["y"])
        if lab.setup.accumulate > 1:
            k, share = lab.setup.accumulate, seen["share"]
            loss = loss / k if share * k == 1 else loss * share
    return float(loss.item())


def truth(q: Question, twin: Timeline, seen: dict[str, Any]) -> list[str]:
    """Run the line on the twin with next; the ids of what it did."""
    lab = twin.lab
    line = ENTRIES[lab.next_line].method
    before = loss_on(lab, seen) if q.kind == "loss" else None
    if before is not None:
        assert before == lab.loss_value  # "the loss just computed" is this batch's
    if line == "forward":
        seen.update(rng=lab.rng, training=lab.model.training)
    try:
        twin.next()
        error = None
    except LineError as raised:
        error = raised.message
    if line == "forward":
        seen.update(x=lab.x, y=lab.y, share=lab.share)
    if q.kind == "raises":
        return ["no" if error is None else "yes"]
    if q.kind == "writes":
        if error is not None:
            return []
        assert lab.last is not None
        return [c.id for c in q.choices if c.id in lab.last["writes"]]
    if q.kind == "loss":
        assert before is not None
        return [verdict(before, loss_on(lab, seen))]
    assert q.param is not None and q.index is not None
    value = "error" if error is not None else element(lab, q.param, q.index)
    return [c.id for c in q.choices if same_value(c.value, value)]


def tries(q: Question) -> list[str | list[str]]:
    ids = [c.id for c in q.choices]
    if not q.multiple:
        return list(ids)
    return [[], *([i] for i in ids), list(q.answer), ids]


def programs() -> st.SearchStrategy[tuple[str, ...] | None]:
    presets = st.sampled_from([p.program for p in PRESETS])
    loose = st.lists(st.sampled_from(list(ENTRIES)), min_size=2, max_size=7).map(tuple)
    return st.one_of(st.none(), presets, loose)


@settings(max_examples=14, deadline=None)
@given(
    scenario=st.sampled_from(["neuron", "moons", "parabola"]),
    optimizer=st.sampled_from(OPTIMIZERS),
    accumulate=st.sampled_from([1, 2]),
    program=programs(),
    extra=st.integers(0, 5),
    moments=st.integers(4, 12),
)
def test_predict_marks_exactly_the_true_choice(
    scenario: str,
    optimizer: OptimizerSpec,
    accumulate: int,
    program: tuple[str, ...] | None,
    extra: int,
    moments: int,
) -> None:
    if scenario == "parabola":
        accumulate = 1
    own = {"moons": MOONS_EXTRAS, "neuron": NEURON_EXTRAS}.get(scenario, [])
    options = [*EXTRAS, *own]
    s = setup(scenario, optimizer, accumulate, options[extra % len(options)])
    if program is not None:
        s = Setup(**{**s.__dict__, "program": program})
    live, twin = Timeline(s, every=3), Timeline(s, every=3)
    seen: dict[str, Any] = {}
    for _ in range(moments):
        before, events = answer(live), list(live.events)
        q = predictions.question(live, SID)
        assert answer(live) == before and live.events == events  # asking changes nothing
        assert predictions.question(live, SID).public() == q.public()
        true = truth(q, twin, seen)
        assert q.answer == true, (q.kind, q.line)
        m = live.moment
        for choice in tries(q):
            live.rewind(m)
            said = predictions.predict(live, SID, choice)
            picked = choice if isinstance(choice, list) else [choice]
            assert said["correct"] == (sorted(picked) == sorted(true)), (q.kind, choice)
            assert said["answer"] == true
            assert [c["id"] for c in said["choices"] if c["misconception"] is None] == true
        live.rewind(m)
        said = predictions.predict(live, SID, true if q.multiple else true[0])
        assert said["correct"]
        assert answer(live) == answer(twin) and live.moments == twin.moments
        if said["error"] is not None:
            assert twin.lab.next_line == live.lab.next_line
            break  # the cursor stays on a line that raises: next would raise again
    score = predictions.score(live)
    assert score["asked"] == score["correct"] == live.moments + (said["error"] is not None)
    assert all(m["predicted"] is True for m in live.summary()[1:])


def test_the_worked_example_asks_and_scores() -> None:
    """A wrong answer is marked wrong with its misconception; rewinding past it and predicting
    again replaces it; the score counts the current timeline's moments."""
    s = setup("neuron")
    live = Timeline(s)
    for _ in range(3):
        q = predictions.question(live, SID)
        predictions.predict(live, SID, q.answer if q.multiple else q.answer[0])
    q = predictions.question(live, SID)  # backward
    assert q.line == "backward"
    wrong = next(c for c in q.choices if c.misconception is not None)
    said = predictions.predict(live, SID, [wrong.id] if q.multiple else wrong.id)
    assert not said["correct"] and said["answer"] == q.answer
    assert predictions.score(live)["correct"] == 3 and live.summary()[4]["predicted"] is False
    live.rewind(3)
    predictions.predict(live, SID, q.answer if q.multiple else q.answer[0])
    score = predictions.score(live)
    assert (score["asked"], score["correct"]) == (4, 4)
    assert score["by_line"]["backward"] == {"asked": 1, "correct": 1}
    with pytest.raises(predictions.NotOffered):
        predictions.predict(live, SID, "no-such-choice")
