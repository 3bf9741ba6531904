"""Predict-first and explain costs against a line, one command: ``python bench/predict.py``.

In process (no HTTP: the routes only delegate), on timelines of ``--iterations`` iterations:

1. ``question`` (a scratch replay from the newest checkpoint, the line on it) per line, against
   ``next``; then ``predict`` (the kept question, the prediction logged, the line run);
2. ``explain`` of one ``.grad`` element, correct loop (one part) and a loop that never zeroes
   (a part per iteration: the replay starts at the start, the newest 8 parts are split).

Prints a table of medians and ratios to a line. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.engine.optimizers import OptimizerSpec  # noqa: E402
from app.log.records import Setup  # noqa: E402
from app.log.timeline import Timeline  # noqa: E402
from app.predict import explanations, predictions  # noqa: E402

CORRECT = ("forward", "loss", "zero_grad", "backward", "step")
SKIP = ("forward", "loss", "backward", "step")


def median_ms(job: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        job()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    print(f"{'scenario':8} {'loop':5} {'next ms':>8} {'question':>9} {'predict':>8} "
          f"{'explain':>8}  (ratios to next)  question ms  explain ms")  # fmt: skip
    for scenario in ("neuron", "moons"):
        for name, program in (("right", CORRECT), ("skip", SKIP)):
            setup = Setup(scenario, 0.05, 0, OptimizerSpec("adam"), program=program)
            t = Timeline(setup)
            t.run(args.iterations)
            line = median_ms(t.next, args.rounds)
            asked, said = [], []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                q = predictions.question(t, "bench")
                t1 = time.perf_counter()
                predictions.predict(t, "bench", q.answer if q.multiple else q.answer[0])
                asked.append(t1 - t0)
                said.append(time.perf_counter() - t1)
            while t.lab.next_line != "step":
                t.next()
            param = next(iter(t.lab.named))
            explain = median_ms(lambda: explanations.explain(t, param, 0), 3)  # noqa: B023
            q_ms, p_ms = (statistics.median(x) * 1000 for x in (asked, said))
            print(f"{scenario:8} {name:5} {line:8.2f} {q_ms / line:9.1f} {p_ms / line:8.1f} "
                  f"{explain / line:8.1f}  {q_ms:26.1f} {explain:11.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
