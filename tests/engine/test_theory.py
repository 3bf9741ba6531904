"""The parabola: the measured oscillation against the lesson's formula."""

from __future__ import annotations

import math

import pytest

from app.engine import Lab, Toggles
from app.engine.optimizers import PLAIN_SGD
from app.engine.setup import Setup
from app.engine.theory import parabola
from app.engine.views import TheoryView


def theory_of(lab: Lab) -> TheoryView:
    """The Session's formal statement (a parabola session has one)."""
    theory = lab.view()["theory"]
    assert theory is not None
    return theory


def predicted_error(theory: TheoryView, t: int) -> float:
    """e(t) = A cos(omega t + phi): the error after t steps without zero_grad."""
    w = theory["without_zero_grad"]
    assert w["amplitude"] is not None and w["omega"] is not None and w["phase"] is not None
    return float(w["amplitude"] * math.cos(w["omega"] * t + w["phase"]))


def thetas(lab: Lab, iterations: int) -> list[float]:
    """theta after each step: the value the next loss line saw, then the last one."""
    lab.run(iterations)
    return [*(h["param"] for h in list(lab.history)[1:]), lab.named["theta"].item()]


def test_the_lessons_numbers() -> None:
    t = parabola(0.05, 15, 0.0, 1.4)
    assert t["eta_h"] == pytest.approx(0.75) and t["curvature"] == 15
    assert t["with_zero_grad"]["factor"] == pytest.approx(0.25)
    assert t["without_zero_grad"]["period"] == pytest.approx(7.0, abs=0.05)
    assert parabola(0.3, 15, 0.0, 1.4)["without_zero_grad"]["regime"] == "grows"


def test_with_zero_grad_the_error_shrinks_by_one_minus_eta_h() -> None:
    lab = Lab(Setup("parabola", 0.05, 0, PLAIN_SGD))
    errors = [th - 1.4 for th in thetas(lab, 10)]
    for before, after in zip([-1.4, *errors], errors, strict=False):
        assert after == pytest.approx(0.25 * before, rel=1e-9, abs=1e-15)


def test_without_zero_grad_it_swings_for_ever_with_the_predicted_period() -> None:
    lab = Lab(Setup("parabola", 0.05, 0, PLAIN_SGD))
    lab.set_toggles(Toggles(skip_zero_grad=True))
    theory = theory_of(lab)
    errors = [th - 1.4 for th in thetas(lab, 140)]
    for t, e in enumerate(errors, start=1):
        assert e == pytest.approx(predicted_error(theory, t), abs=1e-9)
    # the amplitude does not decay: the last period swings as wide as the first
    first, last = max(map(abs, errors[:7])), max(map(abs, errors[-7:]))
    assert last == pytest.approx(first, rel=0.05)
    # measured period: mean distance between upward zero crossings
    ups = [t for t in range(1, len(errors)) if errors[t - 1] < 0 <= errors[t]]
    measured = (ups[-1] - ups[0]) / (len(ups) - 1)
    assert measured == pytest.approx(theory["without_zero_grad"]["period"], rel=0.02)


def test_past_eta_h_4_it_grows() -> None:
    lab = Lab(Setup("parabola", 0.3, 0, PLAIN_SGD, options={"curvature": 15}))
    lab.set_toggles(Toggles(skip_zero_grad=True))
    errors = [abs(th - 1.4) for th in thetas(lab, 30)]
    assert errors[-1] > 100 * errors[0]
    assert theory_of(lab)["without_zero_grad"]["regime"] == "grows"


def test_curvature_and_target_are_options() -> None:
    lab = Lab(Setup("parabola", 0.1, 0, PLAIN_SGD, options={"curvature": 2.0, "theta_star": -1.0}))
    lab.run(1)
    assert lab.named["theta"].item() == pytest.approx(-0.2)  # 0 - 0.1 * 2 * (0 - (-1))
    assert theory_of(lab)["eta_h"] == pytest.approx(0.2)
    assert math.isclose(lab.loss_value or 0, 1.0)


def test_tiny_and_underflowing_eta_h_stay_finite() -> None:
    """1 - eta h / 2 rounds to 1 below eta h ~ 2e-16: the period must still be finite."""
    tiny = parabola(1e-18, 15, 0.0, 1.4)["without_zero_grad"]
    assert tiny["regime"] == "oscillates" and tiny["period"] is not None
    assert math.isfinite(tiny["period"])
    assert tiny["period"] == pytest.approx(2 * math.pi / math.sqrt(15e-18), rel=1e-9)
    gone = parabola(5e-324, 1e-10, 0.0, 1.4)["without_zero_grad"]  # eta h underflows to 0
    assert gone["regime"] == "oscillates" and gone["period"] is None
    lab = Lab(Setup("parabola", 1e-18, 0, PLAIN_SGD))
    lab.run(2)
    period = theory_of(lab)["without_zero_grad"]["period"]
    assert period is not None and period > 1e8
