"""``loop-stepper doctor SCRIPT | -m MODULE [options] [-- ARGS…]``: run a training script as
``python SCRIPT ARGS`` would (or a module as ``python -m MODULE ARGS``), under the doctor, and
report like a linter: ``file:line: id message``; ``--json`` for machines; ``--explain ID``
prints what a kind is; ``--select`` / ``--ignore`` choose the kinds; a ``# doctor:
ignore[ID]`` comment silences one kind on its line (``silence.py``).

Exit codes: 0 nothing found; 1 diagnoses; 2 the script failed (its traceback, in PyTorch's own
words, unless a diagnosis names that failure: then 1), the doctor itself failed (an internal
error: the script ran on to its end unwatched, the findings before it are reported), or bad
usage (an unknown kind, no such script or module).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import runpy
import sys
import traceback
from pathlib import Path
from typing import IO, Any

from loop_stepper.doctor import launch, spawned, where
from loop_stepper.doctor.bugs import KINDS
from loop_stepper.doctor.runs import ScriptReport, for_job, watched
from loop_stepper.recorder.internal import InternalError

__all__ = ["ScriptReport", "main", "run", "text"]

LAUNCHERS = {"torch.distributed.run", "torch.distributed.launch"}  # torchrun, as python -m runs it


def run(
    script: Path | None,
    args: list[str],
    iterations: int | None = 50,
    module: str | None = None,
    timeout: float = launch.TIMEOUT,
) -> ScriptReport:
    """Run ``script`` as ``__main__`` with ``args``, its folder first on ``sys.path`` (or
    ``module`` as ``python -m`` runs it: the working folder first, its package imported);
    stop after ``iterations`` optimizer steps (None: at its end)."""
    report = ScriptReport(str(script) if module is None else module)
    saved_argv, saved_path = sys.argv, list(sys.path)
    if module is None:
        assert script is not None
        sys.argv = [str(script), *args]
        sys.path.insert(0, str(script.resolve().parent))
    else:
        sys.argv = [module, *args]  # runpy sets argv[0] to the module's file
        sys.path.insert(0, os.getcwd())

    def go() -> None:
        if module is None:
            runpy.run_path(str(script), run_name="__main__")
        else:
            runpy.run_module(module, run_name="__main__", alter_sys=True)

    try:
        with spawned.following(iterations, timeout):
            return watched(go, report, iterations, timeout)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def text(report: ScriptReport, out: IO[str]) -> None:
    """One block per diagnosis, ``file:line: id message`` first, then a summary line."""
    for d in report.diagnoses:
        print(f"{where.shown(d['file'])}:{d['line']}: {d['bug']} {d['message']}", file=out)
        print(f"    iteration {d['iteration']}; numbers: {_numbers(d['evidence'])}", file=out)
    n = len(report.diagnoses)
    steps = f"{report.iterations} optimizer step{'s' * (report.iterations != 1)}"
    ended = " (stopped there)" if report.stopped else ""
    found = f"{n} silent bug{'s' * (n != 1)}" if n else "no silent bug"
    quiet = f"; {len(report.silenced)} silenced by # doctor: ignore" if report.silenced else ""
    print(f"Found {found} in {steps}{ended}{quiet}.", file=out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loop-stepper doctor",
        description="Run a training script and name each silent bug of its loop at its line.",
    )
    parser.add_argument("script", type=Path, nargs="?", help="the script, as python runs it")
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module as python -m")
    parser.add_argument(
        "--iterations", type=int, default=50, help="stop after N optimizer steps (default 50)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the report as JSON (- for stdout)")
    parser.add_argument("--select", metavar="IDS", help="only these kinds (comma-separated)")
    parser.add_argument("--ignore", metavar="IDS", help="not these kinds (comma-separated)")
    parser.add_argument("--explain", metavar="ID", help="what a kind is, its example, its fix")
    job = parser.add_argument_group("a data-parallel job (as torchrun runs it)")
    job.add_argument("--nproc-per-node", type=int, metavar="N", help="launch N ranks")
    job.add_argument("--master-addr", default="127.0.0.1", help="the job's address")
    job.add_argument("--master-port", type=int, metavar="P", help="its port (a free one)")
    job.add_argument(
        "--timeout",
        type=float,
        default=launch.TIMEOUT,
        help=f"seconds with no rank moving before a hang is reported (default {launch.TIMEOUT:g})",
    )
    parser.add_argument("args", nargs="*", help="the script's own arguments, after --")
    return parser


def _kinds(given: str | None) -> set[str] | None:
    """The ids of ``--select`` / ``--ignore``; an unknown one is a usage error."""
    if given is None:
        return None
    ids = {k.strip() for k in given.split(",") if k.strip()}
    unknown = sorted(ids - KINDS.keys())
    if unknown:
        said = ", ".join(unknown)
        raise ValueError(f"no such kind: {said} (the kinds: docs/doctor.md, or --explain ID)")
    return ids


def main(argv: list[str]) -> int:
    # everything after the first "--" is the script's, wherever the options are; so is
    # everything after ``-m MODULE``, as for python -m
    cut = argv.index("--") if "--" in argv else len(argv)
    if "-m" in argv[:cut] and argv.index("-m") + 2 < cut:
        cut = argv.index("-m") + 2
        rest = argv[cut + 1 if argv[cut : cut + 1] == ["--"] else cut :]
    else:
        rest = argv[cut + 1 :]
    parser = _parser()
    try:
        args = parser.parse_args(argv[:cut])
        if args.script is None and args.module is None and args.explain is None:
            parser.error("the following arguments are required: script (or -m MODULE)")
    except SystemExit as done:
        return 2 if done.code else 0
    args.args += rest
    if args.explain is not None:
        kind = KINDS.get(args.explain)
        if kind is None:
            print(f"loop-stepper doctor: no such kind: {args.explain}", file=sys.stderr)
            return 2
        print(kind.explained(), end="")
        return 0
    try:
        select, ignore = _kinds(args.select), _kinds(args.ignore) or set()
    except ValueError as error:
        print(f"loop-stepper doctor: {error}", file=sys.stderr)
        return 2
    problem = _usage(args)
    if problem:
        print(f"loop-stepper doctor: {problem}", file=sys.stderr)
        return 2
    if args.nproc_per_node is not None:
        return _launch(args, argv[:cut])
    to_stdout = args.json == "-"
    with contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext():
        report = run(args.script, args.args, args.iterations, args.module, args.timeout)
    report.only(select, ignore)
    if report.error is not None and not isinstance(report.error, SystemExit):
        _traceback(report.error, _origin(args.script, args.module))
    elif isinstance(report.error, SystemExit):
        print(f"{report.script}: exited with {report.error.code}", file=sys.stderr)
    if report.internal_error is not None:
        print(_internal(report.internal_error), file=sys.stderr)
    ranked = launch.finish_rank(for_job(report), args.json, args.timeout)
    if ranked is not None:
        launch.leave(ranked)
    if spawned.jobs:  # mp.spawn followed into its workers: the job's report
        folder, world = spawned.jobs[-1]
        return launch.report_job(folder, world, args.json)
    if to_stdout:
        json.dump(report.as_json(), sys.stdout, indent=2, default=str)
        print()
    else:
        if args.json:
            Path(args.json).write_text(json.dumps(report.as_json(), indent=2, default=str))
        text(report, sys.stdout)
    return report.code


def _launch(args: argparse.Namespace, given: list[str]) -> int:
    """``--nproc-per-node N``: the job launched, one report (``launch.py``)."""
    if args.nproc_per_node < 1:
        print("loop-stepper doctor: --nproc-per-node must be at least 1", file=sys.stderr)
        return 2
    options = ["--iterations", str(args.iterations), "--timeout", str(args.timeout)]
    for flag, value in (("--select", args.select), ("--ignore", args.ignore)):
        if value:
            options += [flag, value]
    target = [str(args.script)] if args.module is None else ["-m", args.module]
    return launch.launch(
        args.nproc_per_node,
        [*target, "--", *args.args] if args.module is None else [*target, *args.args],
        options,
        args.master_addr,
        args.master_port,
        args.timeout,
        args.json,
    )


def _usage(args: argparse.Namespace) -> str | None:
    """What is wrong with the command line, in words (None: nothing)."""
    if args.iterations < 1:
        return "--iterations must be at least 1"
    if args.script is not None and args.module is not None:
        return "give a script or -m MODULE, not both"
    torchrun = args.script is not None and args.script.name == "torchrun"
    if torchrun or args.module in LAUNCHERS:
        return (
            "that is torchrun itself, whose ranks the doctor would not see: run "
            "loop-stepper doctor --nproc-per-node N train.py (or torchrun ... -m loop_stepper "
            "doctor train.py)"
        )
    if args.module is not None:  # its top package found, not imported (that is the run's)
        top = args.module.partition(".")[0]
        sys.path.insert(0, os.getcwd())
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        finally:
            sys.path.remove(os.getcwd())
        return None if spec is not None else f"no module named {top}"
    if not args.script.is_file():
        return f"no such script: {args.script}"
    return None


def _origin(script: Path | None, module: str | None) -> str | None:
    if script is not None:
        return str(script.resolve())
    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec(module or "")
        if spec is not None and spec.origin:
            return os.path.realpath(spec.origin)
    return None


def _traceback(error: BaseException, origin: str | None) -> None:
    """The script's traceback from its own first frame on, as Python would print it."""
    tb = error.__traceback__
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename) != origin:
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb or error.__traceback__, file=sys.stderr)


def _internal(error: InternalError) -> str:
    """The doctor's own failure, apart from the script's: where, what, and the traceback."""
    at = "" if error.line is None else f"at {where.shown(error.file)}:{error.line} "
    return f"loop-stepper doctor: {error.said(at)}\n{error.traceback}"


def _numbers(evidence: dict[str, Any]) -> str:
    return json.dumps(evidence, default=str)
