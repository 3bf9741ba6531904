"""The classroom server's command line: ``loop-stepper [--host H] [--port P] [--root-path
/prefix] [--forwarded-allow-ips IPS]`` starts the server; ``loop-stepper backup FILE | restore
FILE | check [FILE]`` look after its SQLite database (the work is in ``app/db/backup.py``). The
``loop-stepper`` command itself is ``loop_stepper/cli.py``: it runs ``doctor`` without the server
and hands every other command here (the ``loop_stepper.server`` entry point)."""

from __future__ import annotations

import argparse
import logging
import resource
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.settings import Settings

LOG = logging.getLogger("loop_stepper")
# files the process holds besides its connections: the database (and its WAL and shm), the
# lock file, logs, the static files being sent, torch's and Python's own; a generous round sum
FILES_BESIDES = 256
# connections a live session may hold at once: the page's keep-alive connection, a lecture's
# event stream, a retry or a second tab
FILES_PER_SESSION = 3


def files_needed(settings: Settings) -> int:
    """The open files a full server may need: every session in memory with its connections."""
    return FILES_PER_SESSION * settings.max_sessions + FILES_BESIDES


def raise_file_limit(settings: Settings) -> tuple[int, str]:
    """The soft RLIMIT_NOFILE raised to the hard one (a laptop's login gives 1,024 soft of a far
    higher hard limit), said in the log with both numbers; and the event loop that suits it.

    Out of files, uvloop (libuv) accepts a connection and closes it at once, so a client gets no
    answer at all; the standard asyncio loop stops accepting for a moment instead, and the
    connection waits in the listen backlog until a file is free (issue 27, measured: 497 of
    1,500 dropped under uvloop at 1,024 files, none under asyncio). So: uvloop, the faster, when
    the limit covers what a full server may need; else asyncio, and a warning."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    was = soft
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as error:  # a container may forbid it: keep what we have
            LOG.warning("could not raise the open files limit from %d: %s", soft, error)
    need = files_needed(settings)
    LOG.info("open files limit: %d (was %d; hard limit %d)", soft, was, hard)
    if soft >= need:
        return soft, "auto"
    LOG.warning(
        "open files limit %d is below the %d a full server may need (%d sessions, %d "
        "connections each, and %d more): raise it (ulimit -n, LimitNOFILE=, docker run "
        "--ulimit nofile=...); until then connections past it wait (asyncio's event loop) "
        "rather than being dropped",
        soft,
        need,
        settings.max_sessions,
        FILES_PER_SESSION,
        FILES_BESIDES,
    )
    return soft, "asyncio"


def main(argv: list[str] | None = None) -> None:
    serve(sys.argv[1:] if argv is None else argv)


def serve(argv: list[str]) -> None:
    import uvicorn
    from pydantic import ValidationError

    from app.db import DatabaseUnavailable
    from app.db.schema import SchemaTooNew
    from app.lti import ConfigError
    from app.main import create_app
    from app.settings import Settings

    settings = Settings()
    parser = argparse.ArgumentParser(
        prog="loop-stepper",
        description="Start the server (no command), or back up, restore or check its database.",
    )
    parser.add_argument("--host", default=settings.host)
    parser.add_argument("--port", type=int, default=settings.port)
    parser.add_argument(
        "--root-path",
        default=settings.root_path,
        help="path prefix a reverse proxy serves the app under, e.g. /loop-stepper "
        "(the proxy strips it before passing requests on)",
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        default=settings.forwarded_allow_ips,
        help="proxies whose X-Forwarded-For/-Proto headers are trusted, comma-separated "
        "(e.g. 127.0.0.1); default: none",
    )
    commands = parser.add_subparsers(
        dest="command",
        metavar="[backup FILE | restore FILE | check [FILE] | doctor SCRIPT]",
        title="commands",
    )
    command = commands.add_parser("backup", help="copy the database, even while a server runs")
    command.add_argument("file", type=Path)
    command = commands.add_parser("restore", help="put a backup in place (no server running)")
    command.add_argument("file", type=Path)
    command = commands.add_parser("check", help="the database's integrity and schema version")
    command.add_argument("file", type=Path, nargs="?", help="default: the server's database")
    commands.add_parser(
        "doctor",
        help="run a training script and name its silent bugs (loop-stepper doctor --help)",
    )
    args = parser.parse_args(argv)
    if args.command:
        sys.exit(admin(settings, args.command, args.file))
    # validated like the environment variables (a root path without its leading "/" is refused)
    try:
        settings = Settings.model_validate(
            {
                **settings.model_dump(),
                "host": args.host,
                "port": args.port,
                "root_path": args.root_path,
                "forwarded_allow_ips": args.forwarded_allow_ips,
            }
        )
    except ValidationError as error:
        parser.error("; ".join(str(e["msg"]) for e in error.errors()))
    trusted = settings.forwarded_allow_ips.strip()
    try:
        app = create_app(settings)
    except (SchemaTooNew, DatabaseUnavailable, ConfigError) as error:  # said plainly
        sys.exit(f"loop-stepper: {error}")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s")
    _, loop = raise_file_limit(settings)
    # One process: every session lives in it (more workers would split the sessions between
    # them). No Server header: it would tell anyone the versions.
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        workers=1,
        loop=loop,
        access_log=settings.access_log,
        server_header=False,
        timeout_keep_alive=30,  # a student clicks every few seconds: keep the connection
        root_path=settings.root_path,
        # without trusted proxies the headers are ignored: anyone could send them
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
    )


def admin(settings: Settings, command: str, file: Path | None) -> int:
    """backup, restore or check; prints the report; 0 when all is well, else 1."""
    from app.db import DatabaseUnavailable, backup

    if settings.database_url and (command != "check" or file is None):
        print(
            "loop-stepper: the database is PostgreSQL (LOOP_STEPPER_DATABASE_URL): back it up "
            "with pg_dump and restore it with pg_restore (docs/deploy.md#backup-and-restore)",
            file=sys.stderr,
        )
        return 2
    own = backup.database_file(settings.data)
    try:
        if command == "backup":
            assert file is not None
            report = backup.backup(own, file)
        elif command == "restore":
            assert file is not None
            report = backup.restore(file, Path(settings.data))
        else:
            report = backup.check(file or own)
    except (backup.BackupError, DatabaseUnavailable) as error:
        print(f"loop-stepper {command}: {error}", file=sys.stderr)
        return 1
    print(report.text())
    return 0 if report.ok else 1


if __name__ == "__main__":
    main()
