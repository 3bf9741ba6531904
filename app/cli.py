"""``loop-stepper [--host H] [--port P]``: start the server."""

from __future__ import annotations

import argparse

import uvicorn

from .main import create_app
from .settings import Settings


def main(argv: list[str] | None = None) -> None:
    settings = Settings()
    parser = argparse.ArgumentParser(prog="loop-stepper", description=__doc__)
    parser.add_argument("--host", default=settings.host)
    parser.add_argument("--port", type=int, default=settings.port)
    args = parser.parse_args(argv)
    settings = settings.model_copy(update={"host": args.host, "port": args.port})
    # One process: every session lives in it (more workers would split the sessions between
    # them). No Server header: it would tell anyone the versions.
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        workers=1,
        access_log=settings.access_log,
        server_header=False,
        timeout_keep_alive=30,  # a student clicks every few seconds: keep the connection
    )


if __name__ == "__main__":
    main()
