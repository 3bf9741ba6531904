"""Real notebook training cells, rebuilt small: test data for a recorder that runs a cell
statement by statement.

Each module of this folder takes one public notebook or script (PyTorch's tutorials, d2l,
Karpathy's lectures, the UvA DL course, *LLMs from Scratch*) and rebuilds, in our own words and
small, what a student would run: the earlier cells (``SETUP``: imports, data, model, helper
functions and classes, run plainly and in order) and the training cell itself (``CELL``: what
goes under ``%%step``). The data are synthesized with seeded generators (no downloads); what
matters for a recorder is kept: where the loop is (in the cell, in a function of an earlier
cell, or in a library), which functions call which, updates by hand through ``.data`` or under
``no_grad``, DataLoaders and Datasets, evaluation helpers, a model replaced mid-cell.

Every cell runs plainly in well under two seconds on two CPU cores, prints a little (at most 30
lines), passes its training loop at least four times, and is deterministic: the same setup run
fresh, then the cell, ends on bit-identical parameters.

Two conventions the tests rely on:

- a cell whose data come through a ``DataLoader`` reads its ``num_workers`` from the global
  ``NUM_WORKERS``, which its setup defines on a line of its own, ``NUM_WORKERS = 0``;
  ``Cell.with_workers(2)`` is the same cell with that line saying 2;
- the d2l cells ``import d2l_small as d2l``: a small rebuild of d2l's library in ``LIBRARY``,
  a folder (no package) the tests put on ``sys.path`` as if it were site-packages.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIBRARY: Path = HERE / "library"
WORKERS = "NUM_WORKERS = 0"  # the line a DataLoader cell's setup defines its workers with
_SOURCE, _REBUILT = "# Source: ", " — rebuilt small in our own words"


@dataclass(frozen=True)
class Cell:
    name: str  # the module's name, e.g. "tutorials_nn_fit"
    source: str  # the public source, as in the module's first line
    setup: tuple[str, ...]  # the earlier notebook cells, run plainly first, in order
    cell: str  # the training cell (what a student puts under %%step)

    @property
    def uses_workers(self) -> bool:
        """Whether the setup defines ``NUM_WORKERS`` (its data come through a DataLoader)."""
        return any(WORKERS in line.split("\n") for line in self.setup)

    def with_workers(self, workers: int) -> Cell:
        """The same cell, its setup's ``NUM_WORKERS`` set to ``workers``."""
        lines = (code.split("\n") for code in self.setup)
        setup = tuple(
            "\n".join(f"NUM_WORKERS = {workers}" if line == WORKERS else line for line in code)
            for code in lines
        )
        return replace(self, setup=setup)


def _load(name: str) -> Cell:
    module = importlib.import_module(f"{__name__}.{name}")
    first = (HERE / f"{name}.py").read_text(encoding="utf-8").split("\n", 1)[0]
    source = first.split("  # noqa")[0]
    assert source.startswith(_SOURCE) and source.endswith(_REBUILT), f"{name}: {first}"
    setup, cell = module.SETUP, module.CELL
    assert isinstance(setup, tuple) and all(isinstance(code, str) for code in setup), name
    assert isinstance(cell, str), name
    return Cell(name, source.removeprefix(_SOURCE).removesuffix(_REBUILT), setup, cell)


CELLS: dict[str, Cell] = {
    path.stem: _load(path.stem) for path in sorted(HERE.glob("*.py")) if path.stem != "__init__"
}
