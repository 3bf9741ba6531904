"""``loop-stepper [--host H] [--port P] [--root-path /prefix] [--forwarded-allow-ips IPS]``."""

from __future__ import annotations

import argparse

import uvicorn
from pydantic import ValidationError

from app.main import create_app
from app.settings import Settings


def main(argv: list[str] | None = None) -> None:
    settings = Settings()
    parser = argparse.ArgumentParser(prog="loop-stepper", description="Start the server.")
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
    args = parser.parse_args(argv)
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
    # One process: every session lives in it (more workers would split the sessions between
    # them). No Server header: it would tell anyone the versions.
    uvicorn.run(
        create_app(settings),
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


if __name__ == "__main__":
    main()
