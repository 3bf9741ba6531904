"""``Server-Timing: app;dur=<ms>`` on every answer: how long the app itself took over it.

A class's click can be slow for two reasons that look alike from a browser: the server's work,
or the machine (a shared host's cores taken away for tens of milliseconds, a backlog of other
requests). The header tells them apart: it is the time from when the app got the request to
when its answer started (routing, the line, its write, the JSON, the gzip), in milliseconds,
and a browser's developer tools show it beside the request's own timing (W3C Server Timing).
``bench/crowd.py`` reads it from every click and prints its p99 beside the clients' p99.
The time before the app got the request (in the socket, or waiting for the event loop) is not
in it: that is the difference between the two.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ServerTiming:
    """Adds the header to the start of every HTTP answer (of a stream too: its first byte)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - start) * 1e3
                took = (b"server-timing", b"app;dur=%.3f" % ms)
                message = {**message, "headers": [*message.get("headers", []), took]}
            await send(message)

        await self.app(scope, receive, sending)
