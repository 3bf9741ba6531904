"""The clicks' lane: a click answered without FastAPI's per-request machinery.

A class clicking Next line together is the classroom server's hottest path, and on it
FastAPI's own work (matching the path against the API's routes one by one, solving the
endpoint's dependencies, validating a query of one integer) cost about 0.8 ms of a click's
1.3 ms in process: more than the line, its answer and its write together (docs/benchmarks.md).
``ClickLane`` is a route second in the app's list (after ``/healthz``) that takes exactly the
request the page sends for a click: ``POST /api/sessions/{id}/{line}`` (under the root path, if
any), no body, no query but ``?since=N``, ``moment=M`` and ``held=V``. It calls the same
endpoint function the API's route would with the same ``SessionCall``, so both answer the same
bytes; errors raised here go through the app's same exception handlers (the lane is inside
them). Anything else (a body, another parameter, a ``since`` that is not a plain number, a
``held`` that is no version) falls through to the API's routes, which validate it and answer as
always; the API's routes stay what the OpenAPI schema documents.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping

from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

from app.web.deps import HELD_PATTERN, MAX_SINCE, SessionCall

Endpoint = Callable[[SessionCall], Awaitable[Response]]
SINCE = "loop_stepper.query"  # the scope's key for the ``since`` and ``moment`` ``matches`` read
HELD = "loop_stepper.held"  # and for ``held``
Query = tuple[int, int | None, str | None]  # since, moment, held
_HELD = re.compile(HELD_PATTERN.encode())


class ClickLane(BaseRoute):
    """``POST {prefix}{session_id}/{name}`` for each ``name`` in ``endpoints``."""

    def __init__(self, prefix: str, endpoints: Mapping[str, Endpoint]) -> None:
        self.prefix, self.endpoints = prefix, dict(endpoints)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope["method"] != "POST":
            return Match.NONE, {}
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root + "/"):  # served under a path (``--root-path``)
            path = path[len(root) :]
        if not path.startswith(self.prefix):
            return Match.NONE, {}
        session_id, _, name = path[len(self.prefix) :].partition("/")
        endpoint = self.endpoints.get(name)
        query = _query(scope["query_string"])
        if endpoint is None or not session_id or query is None or _has_body(scope):
            return Match.NONE, {}
        since, moment, held = query
        child = {
            "endpoint": endpoint,
            "path_params": {"session_id": session_id},
            SINCE: (since, moment),
            HELD: held,
        }
        return Match.FULL, child

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope["app"].state
        session_id = scope["path_params"]["session_id"]
        (since, moment), held = scope[SINCE], scope[HELD]
        call = SessionCall(state.sessions, session_id, state.pool, since, moment, held)
        response = await scope["endpoint"](call)
        await response(scope, receive, send)


def _query(query: bytes) -> Query | None:
    """The query's ``since`` (0 without one) and ``moment`` (None without one), each a plain
    number, and ``held`` (None without one), a version, each at most once; None for any other
    query (the API's routes validate it)."""
    found: dict[bytes, int] = {}
    held: str | None = None
    for pair in query.split(b"&") if query else []:
        key, _, value = pair.partition(b"=")
        if key == b"held" and held is None and _HELD.fullmatch(value):
            held = value.decode()
            continue
        if key not in (b"since", b"moment") or key in found:
            return None
        if not value.isdigit() or len(value) > 16 or int(value) > MAX_SINCE:
            return None
        found[key] = int(value)
    moment = found.get(b"moment")
    if moment == 0:
        return None  # the API's route refuses it (moments made by a line start at 1)
    return found.get(b"since", 0), moment, held


def _has_body(scope: Scope) -> bool:
    for key, value in scope["headers"]:
        if key == b"transfer-encoding" or (key == b"content-length" and value != b"0"):
            return True
    return False
