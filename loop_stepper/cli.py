"""``loop-stepper``: ``loop-stepper doctor SCRIPT …`` runs a training script under the doctor
(``doctor/script.py``) on the lean install; any other command is the classroom server's, found
through the ``loop_stepper.server`` entry point its extra provides. Without that extra it exits 2
naming the one command that installs it. Nothing of the server is imported for the doctor."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from importlib import metadata

DISTRIBUTION = "loop-stepper"
INSTALL_SERVER = 'pip install "loop-stepper[server]"'


def requirement_name(requirement: str) -> str:
    """The distribution a requirement names: ``psycopg[binary]>=3.2; extra == "server"`` →
    ``psycopg``."""
    return re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0]


def server_missing() -> list[str]:
    """The server extra's packages this environment lacks (all there: [])."""
    try:
        required = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return []
    missing = []
    for line in required:
        if not re.search(r"""extra\s*==\s*["']server["']""", line):
            continue
        name = requirement_name(line)
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def server() -> Callable[[list[str]], None]:
    """The server's command line, as the ``loop_stepper.server`` entry point names it."""
    (found,) = metadata.entry_points(group="loop_stepper.server", name="main")
    command: Callable[[list[str]], None] = found.load()
    return command


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["doctor"]:
        from loop_stepper.doctor.script import main as doctor

        sys.exit(doctor(argv[1:]))
    missing = server_missing()
    if missing:
        print(
            f"loop-stepper: the classroom server needs its extra ({', '.join(missing)} "
            f"missing): {INSTALL_SERVER}\n"
            "(loop-stepper doctor SCRIPT works without it)",
            file=sys.stderr,
        )
        sys.exit(2)
    server()(argv)
