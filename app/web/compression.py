"""gzip on the wire: 300 students share one classroom access point.

- Answers (a Session is 10-15 KB of JSON) and pages over ``MINIMUM`` bytes are gzipped by
  Starlette's ``GZipMiddleware`` when the client accepts it, at level 1: on a Session level 1
  already halves the bytes, and every level above it costs two to three times the CPU for 5%
  fewer bytes (bench/encode.py), CPU that a click's latency pays.
- Static files are compressed once at level 9 and kept (``CompressedStatic``): they are the
  same for every student, so the best ratio costs nothing per request. The ETag and
  Last-Modified stay the file's own (revalidation, 304, works as before) with
  ``Vary: Accept-Encoding``.
- Never the lectures' event stream (``text/event-stream``): a compressor holds bytes back until
  it has enough, and a follower must get each event the moment it is sent. Starlette 1.10
  leaves it out by default; it is named here again so no upgrade can change that.
"""

from __future__ import annotations

import json
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

MINIMUM = 1000  # bytes: below this gzip saves less than its own header and a round of CPU
ANSWER_LEVEL = 1
STATIC_LEVEL = 9
EXCLUDED = (*DEFAULT_EXCLUDED_CONTENT_TYPES, "text/event-stream")
COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")


def install(app: Starlette) -> None:
    """gzip every answer over ``MINIMUM`` bytes the client accepts gzipped, never the SSE."""
    app.add_middleware(
        GZipMiddleware,
        minimum_size=MINIMUM,
        compresslevel=ANSWER_LEVEL,
        exclude_content_types=EXCLUDED,
    )


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
