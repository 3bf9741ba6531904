"""``%load_ext loop_stepper``, then a cell starting ``%%step [--iterations N] [--step-into]``:
the cell runs as ``record`` runs it, in the notebook's own namespace (its model is trained as
the cell says), and the widget shows its trace below it; ``--step-into`` keeps the moments of
calls that changed no store (stepped over by default). The trace is also kept as ``_step`` in
the namespace."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from loop_stepper.doctor.trace import record
from loop_stepper.notebook.widget import Stepper

PARSER = argparse.ArgumentParser(prog="%%step", add_help=False, exit_on_error=False)
PARSER.add_argument("--iterations", default="3", help="iterations to record, or 'all'")
PARSER.add_argument("--step-into", action="store_true", help="keep the moments of quiet calls")
USAGE = "%%step [--iterations N|all] [--step-into]"


class UsageError(ValueError):
    """A %%step line it cannot read, said in words (IPython shows it without a traceback)."""


def options(line: str) -> tuple[int | None, bool]:
    """The iterations (None: all) and whether to step into every call, from a %%step line."""
    try:
        args, rest = PARSER.parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as error:
        raise UsageError(f"{USAGE}: {error}") from error
    if rest:
        raise UsageError(f"{USAGE}: unknown {' '.join(rest)!r}")
    return _iterations(args.iterations), bool(args.step_into)


def iterations_of(line: str) -> int | None:
    return options(line)[0]


def _iterations(given: str) -> int | None:
    if given in ("all", "none", "None"):
        return None
    try:
        n = int(given)
    except ValueError:
        raise UsageError(f"--iterations takes a number or 'all', not {given!r}") from None
    if n < 1:
        raise UsageError("--iterations must be at least 1")
    return n


def step(shell: Any, line: str, cell: str) -> Stepper:
    """Record ``cell`` in ``shell``'s namespace and answer the widget that shows it."""
    try:
        iterations, step_into = options(line)
    except UsageError as error:
        from IPython.core.error import UsageError as IPythonUsageError

        raise IPythonUsageError(str(error)) from None
    source = shell.transform_cell(cell)  # line magics and !commands, as IPython would run them
    trace = record(source, shell.user_ns, iterations=iterations, step_into=step_into)
    shell.user_ns["_step"] = trace
    return Stepper(trace)


def load_ipython_extension(shell: Any) -> None:
    def magic(line: str, cell: str) -> Stepper:
        return step(shell, line, cell)

    magic.__doc__ = __doc__
    shell.register_magic_function(magic, magic_kind="cell", magic_name="step")
