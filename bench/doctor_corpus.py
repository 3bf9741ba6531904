"""The doctor's cost on its corpus: ``python bench/doctor_corpus.py`` (~8 min; ``--rounds``,
``--only 0``).

Issue 50's benchmark. Every script of ``tests/doctor/corpus`` (the forum's bugs rebuilt small,
and their correct twins) run in a process of its own twice: plainly (``runpy``) and under the
doctor (``loop_stepper.doctor.script.run``, as ``loop-stepper doctor SCRIPT`` runs it, to the
script's end: the same work both ways), one torch thread, the pair's order swapped each round.
Both processes import torch and the doctor's module first, so what is measured is the
script's run: the CPU time of the process from just before the script to its end, and the
process's peak RSS (``os.wait4``).
Printed: the totals both ways and their ratio, the median and the spread of the per-script
ratios, the slowest scripts. Two processes run at once (the machine's two cores); CPU time is
each process's own. Nothing is asserted: the numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import runpy
import statistics
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "doctor" / "corpus"
MB = 1024


def child(mode: str, script: str) -> None:
    """Run ``script`` (``plain`` or ``doctor``) and print its CPU seconds."""
    import torch

    from loop_stepper.doctor.script import run

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    start = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if mode == "plain":
            with contextlib.suppress(Exception):
                runpy.run_path(script, run_name="__main__")
        else:
            run(Path(script), [], iterations=None)
    print(time.process_time() - start)


def measure(mode: str, script: Path) -> tuple[float, float]:
    """The script's CPU seconds and the process's peak RSS (MB)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    args = [sys.executable, __file__, "--child", mode, str(script)]
    process = subprocess.Popen(
        args, cwd=script.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    out = process.stdout.read()
    _, _, usage = os.wait4(process.pid, 0)
    return float(out.split()[-1]), usage.ru_maxrss / MB


def pair(script: Path, rounds: int) -> tuple[float, float, float, float]:
    cpu: dict[str, list[float]] = {"plain": [], "doctor": []}
    rss: dict[str, list[float]] = {"plain": [], "doctor": []}
    for r in range(rounds):
        for mode in ("plain", "doctor") if r % 2 == 0 else ("doctor", "plain"):
            c, m = measure(mode, script)
            cpu[mode].append(c)
            rss[mode].append(m)
    med = statistics.median
    return med(cpu["plain"]), med(cpu["doctor"]), med(rss["plain"]), med(rss["doctor"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", type=int, default=0, help="the first N scripts (0: all)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    scripts = sorted(CORPUS.glob("*/[0-9]*.py"))
    if args.only:
        scripts = scripts[: args.only]
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {len(scripts)} scripts, "
          f"{args.rounds} round(s)\n")  # fmt: skip
    with ThreadPoolExecutor(2) as pool:
        figures = list(pool.map(lambda s: pair(s, args.rounds), scripts))
    cpu_p = sum(f[0] for f in figures)
    cpu_d = sum(f[1] for f in figures)
    ratios = sorted(f[1] / f[0] for f in figures if f[0] > 0)
    memory = sorted(f[3] / f[2] for f in figures)
    q = statistics.quantiles(ratios, n=4)
    by_script = [f[1] / f[0] if f[0] > 0 else 1.0 for f in figures]
    slowest = sorted(zip(by_script, scripts, strict=True))
    print("| measure | plain | under the doctor | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| CPU s of all {len(scripts)} scripts' runs | {cpu_p:.2f} | {cpu_d:.2f} | "
          f"{cpu_d / cpu_p:.2f} x |")  # fmt: skip
    print(f"| per script, CPU (median; IQR; max) | | | {statistics.median(ratios):.2f} x; "
          f"{q[0]:.2f}-{q[2]:.2f}; {ratios[-1]:.2f} x |")  # fmt: skip
    print(f"| per script, peak RSS (median; max) | {statistics.median(f[2] for f in figures):.0f}"
          f" MB | {statistics.median(f[3] for f in figures):.0f} MB | "
          f"{statistics.median(memory):.2f} x; {memory[-1]:.2f} x |")  # fmt: skip
    print("\nslowest:", ", ".join(f"{s.name} {r:.2f} x" for r, s in slowest[-3:][::-1]))


if __name__ == "__main__":
    main()
