"""``%load_ext loop_stepper``, then a cell starting ``%%step [--iterations N]``: the cell runs
as ``record`` runs it, in the notebook's own namespace (its model is trained as the cell says),
and the widget shows its trace below it. The trace is also kept as ``_step`` in the namespace."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from loop_stepper.doctor.trace import record
from loop_stepper.notebook.widget import Stepper

PARSER = argparse.ArgumentParser(prog="%%step", add_help=False, exit_on_error=False)
PARSER.add_argument("--iterations", default="3", help="iterations to record, or 'all'")


class UsageError(ValueError):
    """A %%step line it cannot read, said in words (IPython shows it without a traceback)."""


def iterations_of(line: str) -> int | None:
    try:
        args, rest = PARSER.parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as error:
        raise UsageError(f"%%step [--iterations N|all]: {error}") from error
    if rest:
        raise UsageError(f"%%step [--iterations N|all]: unknown {' '.join(rest)!r}")
    if args.iterations in ("all", "none", "None"):
        return None
    try:
        n = int(args.iterations)
    except ValueError:
        raise UsageError(f"--iterations takes a number or 'all', not {args.iterations!r}") from None
    if n < 1:
        raise UsageError("--iterations must be at least 1")
    return n


def step(shell: Any, line: str, cell: str) -> Stepper:
    """Record ``cell`` in ``shell``'s namespace and answer the widget that shows it."""
    try:
        iterations = iterations_of(line)
    except UsageError as error:
        from IPython.core.error import UsageError as IPythonUsageError

        raise IPythonUsageError(str(error)) from None
    source = shell.transform_cell(cell)  # line magics and !commands, as IPython would run them
    trace = record(source, shell.user_ns, iterations=iterations)
    shell.user_ns["_step"] = trace
    return Stepper(trace)


def load_ipython_extension(shell: Any) -> None:
    def magic(line: str, cell: str) -> Stepper:
        return step(shell, line, cell)

    magic.__doc__ = __doc__
    shell.register_magic_function(magic, magic_kind="cell", magic_name="step")
