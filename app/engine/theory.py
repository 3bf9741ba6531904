"""The lesson's formal statement for the parabola L = h/2 (theta - theta*)^2, under SGD.

With zero_grad the error e = theta - theta* shrinks by |1 - eta h| a step. Without it the
buffer keeps every past gradient and e(t+1) = (2 - eta h) e(t) - e(t-1): for 0 < eta h < 4
the error is A cos(omega t + phi) with cos omega = 1 - eta h / 2, swinging for ever with
period 2 pi / omega; for eta h >= 4 it grows.
"""

from __future__ import annotations

import math

from app.engine.views import OscillationView, TheoryView


def parabola(eta: float, h: float, theta0: float, theta_star: float) -> TheoryView:
    eh = eta * h
    e0 = theta0 - theta_star
    # cos ω = 1 - ηh/2, written as ω = 2 asin(√(ηh)/2): exact as ηh → 0, where 1 - ηh/2
    # rounds to 1 and acos would give ω = 0 (and a division by sin ω = 0 below)
    omega = 2 * math.asin(math.sqrt(eh) / 2) if 0 < eh < 4 else 0.0
    if omega > 0 and math.sin(omega) > 0:
        # the first step is the same in both loops: e1 = (1 - eta h) e0; then fit A, phi
        e1 = (1 - eh) * e0
        sine = (e0 * math.cos(omega) - e1) / math.sin(omega)
        without: OscillationView = {
            "regime": "oscillates",
            "period": 2 * math.pi / omega,
            "omega": omega,
            "amplitude": math.hypot(e0, sine),
            "phase": math.atan2(sine, e0),
        }
    else:  # ηh >= 4, or so small it underflows: no swing to draw
        without = {
            "regime": "grows" if eh >= 4 else "oscillates",
            "period": None,
            "omega": None,
            "amplitude": None,
            "phase": None,
        }
    return {
        "eta_h": eh,
        "curvature": h,
        "theta_star": theta_star,
        "with_zero_grad": {"factor": abs(1 - eh), "settles": abs(1 - eh) < 1},
        "without_zero_grad": without,
    }
