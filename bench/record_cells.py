"""``record`` on real training cells, one command: ``python bench/record_cells.py``.

Each cell of ``tests/recorder/cells`` (PyTorch's tutorials, d2l with a rebuild of its library
installed as a package, Karpathy's lectures, the UvA course, *LLMs from Scratch*, rebuilt
small): its setup cells run plainly in a real IPython shell, then the training cell run plainly
and under ``record`` to its end (``iterations=None``), alternating, in a fresh namespace each
time, after a warm-up (the first optimizer's import of torch._dynamo paid before). For each:
the medians of this process's CPU time, their ratio, the moments and the moments per iteration.
Prints a table with the median and the slowest ratio; nothing is asserted. One thread for
torch (``torch.set_num_threads(1)``: on two cores, a second thread makes every time a race).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from loop_stepper.recorder import MAX_MOMENTS, record  # noqa: E402
from tests.recorder.cells import CELLS, LIBRARY, Cell  # noqa: E402


def fresh(shell: Any, cell: Cell) -> None:
    """A new namespace holding what the cell's setup makes."""
    shell.reset(new_session=False)
    sys.modules.pop("d2l_small", None)
    for code in cell.setup:
        assert shell.run_cell(code).success, code


def timed(shell: Any, cell: Cell, recorded: bool) -> tuple[float, Any]:
    fresh(shell, cell)
    with contextlib.redirect_stdout(io.StringIO()):
        start = time.process_time()
        if recorded:
            trace = record(cell.cell, shell.user_ns, iterations=None)
        else:
            trace = None
            assert shell.run_cell(cell.cell).success
        spent = time.process_time() - start
    return spent, trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each, alternating")
    parser.add_argument("cells", nargs="*", default=sorted(CELLS), help="cells to run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    site = Path(tempfile.mkdtemp()) / "site-packages"
    site.mkdir()
    shutil.copy(LIBRARY / "d2l_small.py", site)
    sys.path.insert(0, str(site))
    shell = InteractiveShell.instance()
    rows, ratios = [], []
    with contextlib.redirect_stdout(io.StringIO()):
        torch.optim.SGD([torch.zeros(1, requires_grad=True)])  # torch._dynamo, imported once
    for name in args.cells:
        cell = CELLS[name]
        with contextlib.redirect_stdout(io.StringIO()):
            timed(shell, cell, False)  # warm: each cell's own first imports
            timed(shell, cell, True)
        plain, recorded = [], []
        trace = None
        for _ in range(args.rounds):
            plain.append(timed(shell, cell, False)[0])
            spent, trace = timed(shell, cell, True)
            recorded.append(spent)
        assert trace is not None
        p, r = statistics.median(plain), statistics.median(recorded)
        ratio = r / p
        ratios.append(ratio)
        capped = len(trace.moments) >= MAX_MOMENTS
        per = len(trace.moments) / max(trace.iterations, 1)
        rows.append(
            f"| {name} | {trace.iterations}{' (capped)' if capped else ''} "
            f"| {len(trace.moments)} | {per:.1f} | {p * 1000:.1f} | {r * 1000:.1f} "
            f"| {ratio:.1f} x |"
        )
        print(rows[-1], file=sys.stderr)
    print("| cell | iterations | moments | moments / iteration | plain ms | record ms | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print(
        f"\nmedian {statistics.median(ratios):.1f} x, slowest {max(ratios):.1f} x "
        f"({args.cells[ratios.index(max(ratios))]}); {args.rounds} rounds, one torch thread"
    )


if __name__ == "__main__":
    main()
