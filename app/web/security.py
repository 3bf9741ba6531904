"""Hardening for a server a whole lecture hall can reach: headers on every answer, a body limit.

One pure ASGI middleware (no per-request Request objects, no extra task), installed outermost
by ``create_app``:

- every HTTP response, errors and static files included, carries a strict Content-Security-Policy
  (everything from this origin only, no inline script, no framing), ``nosniff``, a Referrer-Policy
  and same-origin isolation headers; framing is allowed only to the origins an instructor names
  (``frame_ancestors``: an LMS or a slide deck), and then ``X-Frame-Options`` (which can only say
  DENY or SAMEORIGIN, never another origin) is left out so it does not veto them;
- a request body larger than ``max_body`` bytes is refused with 413 ``{"detail": ...}``, whether
  it declares its length or arrives chunked (the body is counted as it is read, and never more
  than the limit is held); a path named in ``bodies`` has its own limit and words instead (an
  uploaded CSV dataset: 1 MB, where every JSON body is under 1 KB);
- no CORS: no ``Access-Control-*`` header is ever sent, so browsers keep other origins out.

The API docs (``/docs``) are served from vendored files too (see ``docs.py``); Swagger UI sets
inline styles and data: images, so only that page's policy allows those two, never scripts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors {ancestors}"
)
# Swagger UI styles elements inline and draws icons as data: URIs; scripts stay 'self' only.
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors {ancestors}"
)
DOCS_PATHS = frozenset({"/docs"})
# a route's own header naming one more origin its page's forms post to (the LTI deep-linking
# answer posts to the platform): taken out, and added to the CSP's form-action
FORM_ACTION = b"x-form-action-origin"


def _headers(csp: str, frame_ancestors: str) -> list[tuple[bytes, bytes]]:
    framing = [] if frame_ancestors else [(b"x-frame-options", b"DENY")]
    return [
        (b"content-security-policy", csp.format(ancestors=frame_ancestors or "'none'").encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        *framing,
        (b"cross-origin-opener-policy", b"same-origin"),
        (b"cross-origin-resource-policy", b"same-origin"),
        (b"permissions-policy", b"camera=(), microphone=(), geolocation=(), interest-cohort=()"),
    ]


# every name either header set may carry: a route's own copy of one is replaced, never doubled
SECURITY_NAMES = frozenset(name for name, _ in _headers(CSP, "")) | {b"x-frame-options"}


def _route_path(scope: Scope) -> str:
    """The path without the proxy's prefix (uvicorn puts ``root_path`` in front of it)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root + "/") else path


# a path's own body limit: its bytes, and the 413's words ("%d" is the limit)
BodyLimit = tuple[int, str]
TOO_LARGE = "request body too large: at most %d bytes"


class SecurityMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        max_body: int,
        frame_ancestors: str = "",
        served_by: str = "",
        bodies: Mapping[str, BodyLimit] | None = None,
    ) -> None:
        self.app, self.max_body = app, max_body
        self.bodies = dict(bodies or {})
        # which process answered, behind a load balancer (settings.served_by)
        named = [(b"x-served-by", served_by.encode())] if served_by else []
        self.headers = _headers(CSP, frame_ancestors) + named
        self.docs_headers = _headers(DOCS_CSP, frame_ancestors) + named

    def _under(self, path: str) -> BodyLimit:
        """A path's limit by a prefix of ``bodies`` ending in "/" (a lesson's PUT), else the
        general one."""
        for prefix, limit in self.bodies.items():
            if prefix.endswith("/") and path.startswith(prefix):
                return limit
        return self.max_body, TOO_LARGE

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = _route_path(scope)
        extra = self.docs_headers if path in DOCS_PATHS else self.headers
        limit, words = self.bodies.get(path) or self._under(path)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept, also = [], extra
                for k, v in message.get("headers", []):
                    if k.lower() == FORM_ACTION:
                        also = self._widened(extra, v)
                    elif k.lower() not in SECURITY_NAMES:
                        kept.append((k, v))
                message = {**message, "headers": kept + also}
            await send(message)

        declared = _content_length(scope["headers"])
        if declared is not None and declared > limit:
            await self._too_large(send_with_headers, words % limit)
            return
        # Read the whole (small) body now, counting as it comes: a chunked body has no length.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._too_large(send_with_headers, words % limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect as usual

        await self.app(scope, replay, send_with_headers)

    @staticmethod
    def _widened(headers: list[tuple[bytes, bytes]], origin: bytes) -> list[tuple[bytes, bytes]]:
        """``headers`` with ``origin`` (one http(s) origin, no spaces nor ';') allowed as a
        form's action."""
        if not re.fullmatch(rb"https?://[A-Za-z0-9.\-\[\]:]+", origin):
            return headers
        return [
            (k, v.replace(b"form-action 'self'", b"form-action 'self' " + origin))
            if k == b"content-security-policy"
            else (k, v)
            for k, v in headers
        ]

    async def _too_large(self, send: Send, detail: str) -> None:
        payload = json.dumps({"detail": detail}, separators=(",", ":")).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def _content_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the HTTP server rejects a malformed length itself
    return None


def install(
    app: Starlette,
    max_body: int,
    frame_ancestors: str = "",
    served_by: str = "",
    bodies: Mapping[str, BodyLimit] | None = None,
) -> None:
    """Wrap the whole middleware stack, Starlette's 500 handler included.

    ``add_middleware`` would put it inside ``ServerErrorMiddleware``, so an unexpected 500 would
    go out without the headers; wrapping the built stack covers every response.
    """
    build = app.build_middleware_stack

    def build_wrapped() -> ASGIApp:
        return SecurityMiddleware(
            build(),
            max_body=max_body,
            frame_ancestors=frame_ancestors,
            served_by=served_by,
            bodies=bodies,
        )

    setattr(app, "build_middleware_stack", build_wrapped)  # noqa: B010
