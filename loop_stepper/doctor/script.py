"""``loop-stepper doctor SCRIPT [--iterations N] [--json PATH] [-- ARGS…]``: run a training
script as ``python SCRIPT ARGS`` would, under the doctor, and report like a linter.

Exit codes: 0 nothing found; 1 diagnoses; 2 the script failed (its traceback, in PyTorch's own
words, unless a diagnosis names that failure: then 1), the doctor itself failed (an internal
error: the script ran on to its end unwatched, the findings before it are reported), or bad
usage.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import runpy
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from loop_stepper.doctor.bugs import Diagnosis
from loop_stepper.doctor.doctor import Stopped
from loop_stepper.doctor.watch import watch
from loop_stepper.recorder.internal import InternalError

# the failures a diagnosis names in PyTorch's own words
NAMED_FAILURES = {"backward_twice", "no_gradient"}


@dataclass
class ScriptReport:
    script: str
    iterations: int = 0
    stopped: bool = False
    diagnoses: list[Diagnosis] = field(default_factory=list)
    error: BaseException | None = None
    internal_error: InternalError | None = None  # ours: the doctor stopped watching there

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "script": self.script,
            "iterations": self.iterations,
            "diagnoses": self.diagnoses,
        }
        if self.internal_error is not None:  # only then: the keys stay what they were
            found["internal_error"] = self.internal_error.as_json()
        return found

    @property
    def code(self) -> int:
        if self.internal_error is not None:
            return 2
        if self.error is not None and not any(d["bug"] in NAMED_FAILURES for d in self.diagnoses):
            return 2
        return 1 if self.diagnoses else 0


def run(script: Path, args: list[str], iterations: int | None = 50) -> ScriptReport:
    """Run ``script`` as ``__main__`` with ``args``, its folder first on ``sys.path``; stop
    after ``iterations`` optimizer steps (None: at its end)."""
    report = ScriptReport(str(script))
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        with watch(iterations=iterations) as doctor:
            try:
                runpy.run_path(str(script), run_name="__main__")
            except Stopped:
                report.stopped = True
            except SystemExit as done:
                if done.code not in (None, 0):
                    report.error = done
            except BaseException as error:  # the script's own failure, told in its words
                report.error = error
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    report.iterations = doctor.primary_steps
    report.diagnoses = doctor.diagnoses
    report.internal_error = doctor.internal_error
    return report


def text(report: ScriptReport, out: IO[str]) -> None:
    """One block per diagnosis, ``file:line: id message`` first, then a summary line."""
    for d in report.diagnoses:
        print(f"{_shown(d['file'])}:{d['line']}: {d['bug']} {d['message']}", file=out)
        print(f"    iteration {d['iteration']}; numbers: {_numbers(d['evidence'])}", file=out)
    n = len(report.diagnoses)
    steps = f"{report.iterations} optimizer step{'s' * (report.iterations != 1)}"
    ended = " (stopped there)" if report.stopped else ""
    found = f"{n} silent bug{'s' * (n != 1)}" if n else "no silent bug"
    print(f"Found {found} in {steps}{ended}.", file=out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="loop-stepper doctor",
        description="Run a training script and name each silent bug of its loop at its line.",
    )
    parser.add_argument("script", type=Path)
    parser.add_argument(
        "--iterations", type=int, default=50, help="stop after N optimizer steps (default 50)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the report as JSON (- for stdout)")
    parser.add_argument("args", nargs="*", help="the script's own arguments, after --")
    # everything after the first "--" is the script's, wherever the options are
    cut = argv.index("--") if "--" in argv else len(argv)
    try:
        args = parser.parse_args(argv[:cut])
    except SystemExit as done:
        return 2 if done.code else 0
    args.args += argv[cut + 1 :]
    if args.iterations < 1:
        print("loop-stepper doctor: --iterations must be at least 1", file=sys.stderr)
        return 2
    if not args.script.is_file():
        print(f"loop-stepper doctor: no such script: {args.script}", file=sys.stderr)
        return 2
    to_stdout = args.json == "-"
    with contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext():
        report = run(args.script, args.args, args.iterations)
    if report.error is not None and not isinstance(report.error, SystemExit):
        _traceback(report.error, args.script)
    elif isinstance(report.error, SystemExit):
        print(f"{args.script}: exited with {report.error.code}", file=sys.stderr)
    if report.internal_error is not None:
        print(_internal(report.internal_error), file=sys.stderr)
    if to_stdout:
        json.dump(report.as_json(), sys.stdout, indent=2, default=str)
        print()
    else:
        if args.json:
            Path(args.json).write_text(json.dumps(report.as_json(), indent=2, default=str))
        text(report, sys.stdout)
    return report.code


def _traceback(error: BaseException, script: Path) -> None:
    """The script's traceback from its own first frame on, as Python would print it."""
    tb = error.__traceback__
    mine = str(script.resolve())
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename) != mine:
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb or error.__traceback__, file=sys.stderr)


def _internal(error: InternalError) -> str:
    """The doctor's own failure, apart from the script's: where, what, and the traceback."""
    where = "" if error.line is None else f"at {_shown(error.file)}:{error.line} "
    return f"loop-stepper doctor: {error.said(where)}\n{error.traceback}"


def _shown(file: str | None) -> str:
    if file is None:
        return "<unknown>"
    with contextlib.suppress(ValueError):
        return os.path.relpath(file)
    return file


def _numbers(evidence: dict[str, Any]) -> str:
    return json.dumps(evidence, default=str)
