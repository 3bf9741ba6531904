"""``loop-stepper [--host H] [--port P] [--root-path /prefix] [--forwarded-allow-ips IPS]``
starts the server; ``loop-stepper backup FILE | restore FILE | check [FILE]`` look after its
SQLite database (the work is in ``app/db/backup.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import uvicorn
from pydantic import ValidationError

from app.db import DatabaseUnavailable, backup
from app.db.schema import SchemaTooNew
from app.lti import ConfigError
from app.main import create_app
from app.settings import Settings


def main(argv: list[str] | None = None) -> None:
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
        dest="command", metavar="[backup FILE | restore FILE | check [FILE]]", title="commands"
    )
    command = commands.add_parser("backup", help="copy the database, even while a server runs")
    command.add_argument("file", type=Path)
    command = commands.add_parser("restore", help="put a backup in place (no server running)")
    command.add_argument("file", type=Path)
    command = commands.add_parser("check", help="the database's integrity and schema version")
    command.add_argument("file", type=Path, nargs="?", help="default: the server's database")
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
    # One process: every session lives in it (more workers would split the sessions between
    # them). No Server header: it would tell anyone the versions.
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        workers=1,
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
