"""``changes.py`` on a Lab's own Sessions: what an answer leaves out against the one held, a
NaN never left out, the answers a session keeps."""

from __future__ import annotations

import math
from typing import Any, cast

import torch

from app.engine import Lab
from app.engine.changes import KEPT, STORES, WHOLE, Answers, changed
from app.engine.optimizers import OptimizerSpec
from app.engine.setup import Setup
from app.engine.views import SessionView
from support.held import restore


def lab() -> Lab:
    return Lab(Setup("moons", 0.3, 0, OptimizerSpec("sgd", momentum=0.9), batchnorm=True))


def test_a_line_leaves_out_what_it_did_not_write() -> None:
    moons = lab()
    held = moons.view()
    for line, written in [
        ("forward", {"graph", "buffers"}),  # BatchNorm's running statistics in train mode
        ("loss", {"graph"}),
        ("backward", {"grad", "graph"}),
        ("step", {"params", "optimizer_state"}),
        ("zero_grad", {"grad"}),
    ]:
        moons.run_line(line)
        now = moons.view()
        answer = cast(dict[str, Any], changed(now, held))
        assert set(STORES) - set(answer["unchanged"]) - {"spec", "lesson"} == written, line
        assert not set(answer["unchanged"]) & set(WHOLE) & answer.keys()  # left out
        # moons' tensors are sent exactly: an entry, when sent, carries both its fields
        assert ("params" in answer) == bool(written & {"params", "grad"})
        assert restore(answer, cast(dict[str, Any], held)) == now
        held = now


def test_a_store_holding_nan_is_sent_again() -> None:
    moons = lab()
    with torch.no_grad():
        moons.named["0.weight"][0, 0] = math.nan
    # the same values twice, NaN among them: NaN is not equal to itself, so never left out
    answer = cast(dict[str, Any], changed(moons.view(), moons.view()))
    assert "params" not in answer["unchanged"] and "value" in answer["params"][0]
    assert "grad" in answer["unchanged"]


def test_answers_keep_the_newest_few_and_know_no_other_sessions() -> None:
    moons = lab()
    answers, other = Answers(), Answers()
    assert answers.answer(moons.view(), None) == moons.view()  # no held: the Session itself
    versions = [answers.answer(moons.view(), "none")["version"] for _ in range(KEPT + 1)]
    assert len(set(versions)) == KEPT + 1
    oldest, newest = versions[0], versions[-1]
    assert "unchanged" not in answers.answer(moons.view(), oldest)  # no longer kept
    assert "unchanged" in answers.answer(moons.view(), newest)
    assert "unchanged" not in other.answer(moons.view(), newest)
    view: SessionView = moons.view()
    assert other.answer(view, "none")["version"].split(".")[0] != newest.split(".")[0]
