"""The lesson's formal statement for the parabola L = h/2 (theta - theta*)^2, under SGD.

With zero_grad the error e = theta - theta* shrinks by |1 - eta h| a step. Without it the
buffer keeps every past gradient and e(t+1) = (2 - eta h) e(t) - e(t-1): for 0 < eta h < 4
the error is A cos(omega t + phi) with cos omega = 1 - eta h / 2, swinging for ever with
period 2 pi / omega; for eta h >= 4 it grows.
"""

from __future__ import annotations

import math
from typing import Any


def parabola(eta: float, h: float, theta0: float, theta_star: float) -> dict[str, Any]:
    eh = eta * h
    e0 = theta0 - theta_star
    theory: dict[str, Any] = {
        "eta_h": eh,
        "curvature": h,
        "theta_star": theta_star,
        "with_zero_grad": {"factor": abs(1 - eh), "settles": abs(1 - eh) < 1},
    }
    if 0 < eh < 4:
        omega = math.acos(1 - eh / 2)
        # the first step is the same in both loops: e1 = (1 - eta h) e0; then fit A, phi
        e1 = (1 - eh) * e0
        sine = (e0 * math.cos(omega) - e1) / math.sin(omega)
        theory["without_zero_grad"] = {
            "regime": "oscillates",
            "period": 2 * math.pi / omega,
            "omega": omega,
            "amplitude": math.hypot(e0, sine),
            "phase": math.atan2(sine, e0),
        }
    else:
        theory["without_zero_grad"] = {
            "regime": "grows",
            "period": None,
            "omega": None,
            "amplitude": None,
            "phase": None,
        }
    return theory


def predicted_error(theory: dict[str, Any], t: int) -> float:
    """e(t) = A cos(omega t + phi): the error after t steps without zero_grad."""
    w = theory["without_zero_grad"]
    return float(w["amplitude"] * math.cos(w["omega"] * t + w["phase"]))
