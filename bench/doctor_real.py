"""The doctor on real loops, whole processes: ``python bench/doctor_real.py`` (~3 min on a quiet
machine; ``--steps``, ``--rounds``).

Issue 46's benchmark: three loops rebuilt small after public ones (``bench/loops/``: an LBFGS
loop stepping through a closure, a word-level LSTM updated by hand, a GPT-style loop with
accumulation), each run as ``python LOOP STEPS`` and as ``python -m loop_stepper doctor LOOP
--iterations STEPS -- STEPS``, alternating (the pair's order swapped each round), one torch
thread, at ``STEPS`` and at four times as many. Per process the operating system's own figures
(``os.wait4``): CPU time (user + system) and peak RSS. Printed: the medians both ways and their
ratios, and how much the peak grew from ``STEPS`` to ``4 x STEPS`` both ways (memory flat with
the run's length: the doctor's growth no larger than the plain loop's). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOPS = [
    ("LBFGS, closure (time_sequence_prediction)", "lbfgs_sine.py", 8),
    ("word-level LSTM, hand-written SGD (word_language_model)", "word_lstm.py", 40),
    ("GPT-style, AdamW, accumulation (nanoGPT)", "gpt_char.py", 40),
]
MB = 1024


def run(args: list[str]) -> tuple[float, float]:
    """CPU seconds and peak RSS (MB) of one process."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    process = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / MB


def commands(loop: str, steps: int) -> tuple[list[str], list[str]]:
    path = str(ROOT / "bench" / "loops" / loop)
    plain = [sys.executable, path, str(steps)]
    doctor = [sys.executable, "-m", "loop_stepper", "doctor", path, "--iterations",
              str(steps), "--", str(steps)]  # fmt: skip
    return plain, doctor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply each loop's steps")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {args.rounds} rounds\n")
    print("| loop | steps | CPU s plain / doctor | ratio | ratio at 4 x steps | peak MB plain / "
          "doctor | ratio | peak growth to 4 x steps, plain / doctor (MB) |")  # fmt: skip
    print("|---|---:|---|---:|---:|---|---:|---|")
    for name, loop, base in LOOPS:
        steps = max(1, round(base * args.scale))
        figures: dict[tuple[str, int], list[tuple[float, float]]] = {}
        for n in (steps, 4 * steps):
            plain, doctor = commands(loop, n)
            for r in range(args.rounds):
                pair = [("plain", plain), ("doctor", doctor)]
                for kind, command in pair if r % 2 == 0 else pair[::-1]:
                    figures.setdefault((kind, n), []).append(run(command))

        med = {key: (statistics.median(c for c, _ in v), statistics.median(m for _, m in v))
               for key, v in figures.items()}  # fmt: skip
        (cpu_p, rss_p), (cpu_d, rss_d) = med[("plain", steps)], med[("doctor", steps)]
        grow_p = med[("plain", 4 * steps)][1] - rss_p
        grow_d = med[("doctor", 4 * steps)][1] - rss_d
        longer = med[("doctor", 4 * steps)][0] / med[("plain", 4 * steps)][0]
        print(f"| {name} | {steps} | {cpu_p:.2f} / {cpu_d:.2f} | {cpu_d / cpu_p:.2f} x | "
              f"{longer:.2f} x | "
              f"{rss_p:.0f} / {rss_d:.0f} | {rss_d / rss_p:.2f} x | "
              f"{grow_p:+.0f} / {grow_d:+.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
