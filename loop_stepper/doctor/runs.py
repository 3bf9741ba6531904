"""A run under the doctor and its report: the script's (``script.py``), a rank's of a job
(``job.py``), an ``mp.spawn`` worker's (``spawned.py``)."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loop_stepper.doctor import launch, where
from loop_stepper.doctor.bugs import NAMED_FAILURES, Diagnosis
from loop_stepper.doctor.doctor import Stopped
from loop_stepper.doctor.watch import watch
from loop_stepper.recorder.internal import InternalError

# the failures a diagnosis names in PyTorch's own words


@dataclass
class ScriptReport:
    script: str
    iterations: int = 0
    stopped: bool = False
    diagnoses: list[Diagnosis] = field(default_factory=list)
    error: BaseException | None = None
    internal_error: InternalError | None = None  # ours: the doctor stopped watching there
    silenced: list[Diagnosis] = field(default_factory=list)  # by a # doctor: ignore comment
    facts: dict[str, Any] | None = None  # a job's rank: what the job compares (ranks.py)

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "script": self.script,
            "iterations": self.iterations,
            "diagnoses": self.diagnoses,
        }
        if self.silenced:  # only then: the keys stay what they were
            found["silenced"] = self.silenced
        if self.internal_error is not None:
            found["internal_error"] = self.internal_error.as_json()
        return found

    @property
    def code(self) -> int:
        if self.internal_error is not None:
            return 2
        if self.error is not None and not any(d["bug"] in NAMED_FAILURES for d in self.diagnoses):
            return 2
        return 1 if self.diagnoses else 0

    def only(self, select: set[str] | None, ignore: set[str]) -> None:
        """Keep the kinds ``select`` names (all when None), but those of ``ignore``."""
        self.diagnoses = [
            d
            for d in self.diagnoses
            if (select is None or d["bug"] in select) and d["bug"] not in ignore
        ]


def watched(
    go: Callable[[], object], report: ScriptReport, iterations: int | None, timeout: float
) -> ScriptReport:
    """``go()`` under the doctor (a rank's with its heartbeat), into ``report``."""
    with watch(iterations=iterations) as doctor:
        beat = launch.beat(lambda: list(doctor.diagnoses), lambda: doctor.iteration, timeout)
        try:
            go()
        except Stopped:
            report.stopped = True
        except SystemExit as done:
            if done.code not in (None, 0):
                report.error = done
        except BaseException as error:  # the script's own failure, told in its words
            report.error = error
        finally:
            if beat is not None:
                beat.stop()
    report.iterations = doctor.primary_steps
    report.diagnoses = doctor.diagnoses
    report.silenced = doctor.silenced
    report.internal_error = doctor.internal_error
    report.facts = doctor.facts()
    return report


def for_job(report: ScriptReport) -> dict[str, Any]:
    """This rank's report as the job reads it (``job.py``)."""
    found = report.as_json()
    error = report.error
    if error is not None:
        found["error"] = "".join(traceback.format_exception_only(type(error), error)).strip()
        tb, found["error_at"] = error.__traceback__, None
        while tb is not None:  # the innermost of the script's own lines
            name = tb.tb_frame.f_code.co_filename
            if where.is_theirs(name):
                found["error_at"] = [name, tb.tb_lineno]
            tb = tb.tb_next
    found.update(facts=report.facts, stopped=report.stopped, error_code=report.code)
    return found
