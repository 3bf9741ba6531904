"""The output view computes what the live model computes, and changes nothing."""

from __future__ import annotations

import pytest
import torch

from app.engine import Lab
from app.engine.optimizers import PLAIN_SGD
from app.engine.setup import Setup


def test_neuron_line_is_the_models() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    lab.run(2)
    view = lab.output()
    w, b = lab.named["weight"].item(), lab.named["bias"].item()
    assert view["kind"] == "line" and view["line"]["x"] == [0.0, 5.0]
    assert view["line"]["y"] == lab.model(torch.tensor([[0.0], [5.0]])).flatten().tolist()
    assert abs(view["line"]["y"][1] - (5 * w + b)) < 1e-6


def test_moons_boundary_is_the_models_and_touches_no_store() -> None:
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    lab.forward()
    before = lab.view()
    view = lab.output(size=4)
    x0, x1, y0, y1 = view["extent"]
    corner = torch.tensor([[x0, y0], [x1, y1]], dtype=torch.float64)
    with torch.no_grad():
        p = torch.softmax(lab.model(corner), 1)[:, 1].tolist()
    # bottom-left and top-right corners (a batch of 16 and one of 2 may differ in the last bit)
    assert [view["p"][0][0], view["p"][3][3]] == pytest.approx(p, rel=1e-12)
    assert len(view["points"]) == 150 and set(view["targets"]) == {0, 1}
    assert lab.view() == before
