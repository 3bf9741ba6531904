"""gzip on the wire: 300 students share one classroom access point.

- Answers (a Session is 10-15 KB of JSON) and pages over ``MINIMUM`` bytes are gzipped by
  ``Gzip`` when the client accepts it, at level 1 with ISA-L (python-isal): a Session's gzip
  was the largest part of a click's CPU (19%, py-spy) with zlib, and ISA-L's level 1 takes a
  quarter of zlib's time for fewer bytes (15.5 KB: 0.06 ms and 6.9 KB instead of 0.25 ms and
  7.2 KB). Higher levels cost more CPU, which a click's latency pays, for a few % fewer bytes.
- Static files are compressed once at level 9 and kept (``CompressedStatic``): they are the
  same for every student, so the best ratio costs nothing per request. The ETag and
  Last-Modified stay the file's own (revalidation, 304, works as before) with
  ``Vary: Accept-Encoding``.
- Never the lectures' event stream (``text/event-stream``): a compressor holds bytes back until
  it has enough, and a follower must get each event the moment it is sent. Only a body sent
  whole, of a type in ``COMPRESSIBLE``, is compressed; a stream goes out as it is sent.
"""

from __future__ import annotations

import json
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from isal import isal_zlib
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MINIMUM = 1000  # bytes: below this gzip saves less than its own header and a round of CPU
ANSWER_LEVEL = 1
STATIC_LEVEL = 9
COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")
STREAM = "text/event-stream"


def install(app: Starlette) -> None:
    """gzip every answer over ``MINIMUM`` bytes the client accepts gzipped, never the SSE."""
    app.add_middleware(Gzip)


def accepts_gzip(scope: Scope) -> bool:
    return any(name == b"accept-encoding" and b"gzip" in value for name, value in scope["headers"])


class Gzip:
    """Compresses a body sent whole (one message) of a ``COMPRESSIBLE`` type, over
    ``MINIMUM`` bytes and not encoded already, for a client that accepts gzip."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not accepts_gzip(scope):
            await self.app(scope, receive, send)
            return
        held: Message | None = None  # the start, until the body says whether to compress

        async def sending(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and _may_compress(message):
                held = message
                return
            if held is not None:
                start, held = held, None
                body = message.get("body", b"")
                whole = message["type"] == "http.response.body" and not message.get("more_body")
                if whole and len(body) >= MINIMUM:
                    body = gzip_answer(body)
                    headers = MutableHeaders(raw=start["headers"])
                    headers["content-encoding"] = "gzip"
                    headers["content-length"] = str(len(body))
                    headers.add_vary_header("Accept-Encoding")
                    message = {**message, "body": body}
                await send(start)
            await send(message)

        await self.app(scope, receive, sending)


def _may_compress(start: Message) -> bool:
    headers = Headers(raw=start.get("headers", []))
    kind = headers.get("content-type", "")
    return (
        start["status"] != 206
        and "content-encoding" not in headers
        and kind.startswith(COMPRESSIBLE)
        and not kind.startswith(STREAM)
    )


def gzip_answer(data: bytes) -> bytes:
    compressor = isal_zlib.compressobj(ANSWER_LEVEL, isal_zlib.DEFLATED, 16 + isal_zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def gzip(data: bytes, level: int) -> bytes:
    compressor = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


class CompressedStatic(StaticFiles):
    """Static files, served gzipped from memory to clients that accept it.

    A file is compressed once per version (its path, modification time and size), off the
    event loop; an edited file is compressed again on its next request."""

    def __init__(self, *, directory: str | os.PathLike[str]) -> None:
        super().__init__(directory=directory)
        self.compressed: dict[tuple[str, int, int], bytes] = {}

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if (
            not isinstance(response, FileResponse)
            or response.status_code != 200
            or response.stat_result is None
            or response.stat_result.st_size < MINIMUM
            or scope["method"] != "GET"
            or "gzip" not in Headers(scope=scope).get("accept-encoding", "")
            or not response.media_type
            or not response.media_type.startswith(COMPRESSIBLE)
        ):
            return response
        stat = response.stat_result
        key = (str(response.path), stat.st_mtime_ns, stat.st_size)
        body = self.compressed.get(key)
        if body is None:
            body = await anyio.to_thread.run_sync(self._compress, str(response.path))
            self.compressed[key] = body
        headers = {
            name: value
            for name, value in response.headers.items()
            if name in ("etag", "last-modified", "content-type")
        }
        headers |= {"content-encoding": "gzip", "vary": "Accept-Encoding"}
        return Response(body, headers=headers)

    @staticmethod
    def _compress(path: str) -> bytes:
        with open(path, "rb") as file:
            return gzip(file.read(), STATIC_LEVEL)


class SharedAnswer:
    """One JSON object answered to many clients but for one string field (a class forking one
    moment of a lecture: the same Session, each with its own id), encoded once and gzipped
    once: that field is put last, the rest is compressed up to it, and each client's copy
    costs a copy of the compressor's state and a few bytes more (about a tenth of compressing
    the 27 KB of a 750-line moons Session again, which the event loop would pay 300 times)."""

    def __init__(self, body: bytes, field: str) -> None:
        if not body.startswith(b"{") or not body.endswith(b"}"):
            raise ValueError("a SharedAnswer is a JSON object")
        separator = b"" if body == b"{}" else b","
        self.head = body[:-1] + separator + json.dumps(field).encode() + b":"
        self._compressor = zlib.compressobj(ANSWER_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        self._gzipped_head = self._compressor.compress(self.head)

    def body(self, value: str, *, gzipped: bool) -> bytes:
        tail = json.dumps(value).encode() + b"}"
        if not gzipped:
            return self.head + tail
        compressor = self._compressor.copy()  # the state after the head, kept for the next
        return self._gzipped_head + compressor.compress(tail) + compressor.flush()

    def response(self, value: str, scope: Scope, **options: Any) -> Response:
        """The answer with ``value`` in the field, gzipped if the client takes gzip."""
        gzipped = "gzip" in Headers(scope=scope).get("accept-encoding", "")
        headers = {"vary": "Accept-Encoding"} | ({"content-encoding": "gzip"} if gzipped else {})
        return Response(
            self.body(value, gzipped=gzipped),
            media_type="application/json",
            headers=headers,
            **options,
        )


class SharedAnswers:
    """The newest ``kept`` SharedAnswers by key (a lecture's moment, a setup): used on the event
    loop's thread only, so no lock."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self._answers: OrderedDict[str, SharedAnswer] = OrderedDict()

    def find(self, key: str) -> SharedAnswer | None:
        return self._answers.get(key)

    def get(self, key: str, body: Callable[[], bytes], field: str = "id") -> SharedAnswer:
        """The answer kept under ``key``, else one made from ``body()`` (the object without
        ``field``) and kept."""
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = SharedAnswer(body(), field)
            while len(self._answers) > self.kept:
                self._answers.popitem(last=False)
        else:
            self._answers.move_to_end(key)
        return answer
