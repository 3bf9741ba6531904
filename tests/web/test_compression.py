"""gzip on the wire: answers, pages and static files over ~1 KB when the client accepts it,
the same bytes once decoded; never the lectures' event stream, which must arrive unbuffered."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from app.settings import Settings
from app.web.compression import MINIMUM, Gzip, SharedAnswer

GZIP = {"accept-encoding": "gzip"}
PLAIN = {"accept-encoding": "identity"}
STATIC = Settings().static_dir


def raw(client: httpx.Client, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    """The response with its body as it came over the wire (not decoded by httpx)."""
    with client.stream(method, path, headers=headers) as r:
        r.wire = b"".join(r.iter_raw())  # type: ignore[attr-defined]
    return r


def moons(client: httpx.Client) -> str:
    r = client.post("/api/sessions", json={"scenario": "moons"}, headers=GZIP)
    assert r.status_code == 201, r.text
    assert r.headers["content-encoding"] == "gzip"  # the create's answer too
    sid: str = r.json()["id"]
    for line in ("forward", "loss", "zero_grad", "backward"):
        assert client.post(f"/api/sessions/{sid}/{line}").status_code == 200
    return sid


def test_a_session_answer_is_gzipped_and_decodes_to_the_plain_one(client: httpx.Client) -> None:
    sid = moons(client)
    zipped = raw(client, "GET", f"/api/sessions/{sid}", GZIP)
    plain = raw(client, "GET", f"/api/sessions/{sid}", PLAIN)
    assert zipped.status_code == plain.status_code == 200
    assert zipped.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in zipped.headers["vary"].lower()
    assert "content-encoding" not in plain.headers
    body = gzip.decompress(zipped.wire)  # type: ignore[attr-defined]
    assert body == plain.wire  # type: ignore[attr-defined]
    assert len(zipped.wire) < len(plain.wire) / 2  # type: ignore[attr-defined]
    session = json.loads(body)
    assert session["id"] == sid and session["scenario"] == "moons"
    assert int(zipped.headers["content-length"]) == len(zipped.wire)  # type: ignore[attr-defined]


def test_a_line_answer_is_gzipped(client: httpx.Client) -> None:
    sid = moons(client)
    r = raw(client, "POST", f"/api/sessions/{sid}/step", GZIP)
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(r.wire))["id"] == sid  # type: ignore[attr-defined]


def test_the_forks_of_one_moment_share_one_encoding(client: httpx.Client) -> None:
    """A class forking one moment gets one answer but the id, encoded and gzipped once: each
    fork's body, gzipped or not, is exactly the JSON of its own Session."""
    sid = moons(client)
    code = client.post(f"/api/sessions/{sid}/lecture").json()["code"]
    zipped = [raw(client, "POST", f"/api/lectures/{code}/fork", GZIP) for _ in range(3)]
    plain = raw(client, "POST", f"/api/lectures/{code}/fork", PLAIN)
    forks = [json.loads(gzip.decompress(r.wire)) for r in zipped]  # type: ignore[attr-defined]
    forks.append(json.loads(plain.wire))  # type: ignore[attr-defined]
    assert [r.status_code for r in [*zipped, plain]] == [201] * 4
    assert all(r.headers["content-encoding"] == "gzip" for r in zipped)
    assert "content-encoding" not in plain.headers
    lecture = client.get(f"/api/sessions/{sid}").json()
    ids = {f.pop("id") for f in forks}
    assert len(ids) == 4 and sid not in ids
    lecture.pop("id")
    assert all(f == lecture for f in forks)
    for fork in ids:  # each its own session, at the lecture's moment
        assert client.get(f"/api/sessions/{fork}").json()["moment"] == lecture["moment"] == 4


def test_new_sessions_of_one_setup_share_one_encoding(client: httpx.Client) -> None:
    """A new session's answer is encoded once per setup: each is exactly its own Session (as a
    GET computes it afresh), gzipped or not, and another setup's is its own."""
    moons: dict[str, Any] = {"scenario": "moons"}
    neuron: dict[str, Any] = {"scenario": "neuron", "lr": 0.2}
    answers: dict[str, list[dict[str, Any]]] = {"moons": [], "neuron": []}
    for setup in (moons, neuron, moons, neuron):
        for headers in (GZIP, PLAIN):
            r = client.post("/api/sessions", json=setup, headers=headers)
            assert r.status_code == 201
            assert ("content-encoding" in r.headers) == (headers is GZIP)
            created = r.json()
            assert created == client.get(f"/api/sessions/{created['id']}").json()
            answers[setup["scenario"]].append({k: v for k, v in created.items() if k != "id"})
    for same in answers.values():
        assert all(a == same[0] for a in same)
    assert answers["moons"][0] != answers["neuron"][0]
    assert answers["neuron"][0]["lr"] == 0.2


def test_new_sessions_started_as_their_log_run_the_same_lines(client: httpx.Client) -> None:
    """The second and later sessions of a setup are answered from their log alone (their Lab
    is built after the answer): each one's lines give the first one's numbers, and each is
    its own session."""
    ids = [client.post("/api/sessions", json={"scenario": "moons"}).json()["id"] for _ in range(6)]
    for _ in range(7):  # into the second iteration
        lines = [client.post(f"/api/sessions/{sid}/next").json() for sid in ids]
        assert all({k: v for k, v in a.items() if k != "id"} ==
                   {k: v for k, v in lines[0].items() if k != "id"} for a in lines)  # fmt: skip
    client.post(f"/api/sessions/{ids[1]}/next")
    moments = [client.get(f"/api/sessions/{sid}").json()["moment"] for sid in ids]
    assert moments == [7, 8, 7, 7, 7, 7]


def test_a_shared_answer_is_the_json_of_each_value() -> None:
    data = {"moment": 4, "name": "ω", "nested": {"a": [1.5, None]}}
    shared = SharedAnswer(json.dumps(data).encode(), "id")
    for value in ("a", 'quo"te', "x" * 5000):  # the compressor's state is copied, not used up
        want = data | {"id": value}
        assert json.loads(shared.body(value, gzipped=False)) == want
        assert json.loads(gzip.decompress(shared.body(value, gzipped=True))) == want
    assert json.loads(SharedAnswer(b"{}", "id").body("z", gzipped=False)) == {"id": "z"}


def test_a_static_file_is_gzipped_and_revalidates(client: httpx.Client) -> None:
    path = "/static/js/api.js"
    on_disk = (STATIC / "js" / "api.js").read_bytes()
    zipped = raw(client, "GET", path, GZIP)
    plain = raw(client, "GET", path, PLAIN)
    assert zipped.status_code == plain.status_code == 200
    assert zipped.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers
    assert gzip.decompress(zipped.wire) == plain.wire == on_disk  # type: ignore[attr-defined]
    assert zipped.headers["content-type"] == plain.headers["content-type"]
    assert "accept-encoding" in zipped.headers["vary"].lower()
    # revalidation works as before: same ETag and Last-Modified, a 304 when unchanged
    assert zipped.headers["etag"] == plain.headers["etag"]
    assert zipped.headers["last-modified"] == plain.headers["last-modified"]
    again = client.get(path, headers={**GZIP, "if-none-match": zipped.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    # served from memory the second time, the same bytes
    assert raw(client, "GET", path, GZIP).wire == zipped.wire  # type: ignore[attr-defined]


def test_small_answers_and_files_stay_plain(client: httpx.Client) -> None:
    assert len((STATIC / "js" / "views" / "params.js").read_bytes()) < 1000
    for path in ("/static/js/views/params.js", "/healthz", "/api/sessions/not-a-session"):
        r = client.get(path, headers=GZIP)
        assert "content-encoding" not in r.headers, path


def test_the_page_is_gzipped(client: httpx.Client) -> None:
    zipped = raw(client, "GET", "/", GZIP)
    plain = raw(client, "GET", "/", PLAIN)
    assert zipped.headers["content-encoding"] == "gzip"
    assert gzip.decompress(zipped.wire) == plain.wire  # type: ignore[attr-defined]


def test_the_event_stream_is_never_compressed_nor_buffered(
    client: httpx.Client, base_url: str
) -> None:
    sid = moons(client)
    r = client.post(f"/api/sessions/{sid}/lecture")
    assert r.status_code == 201, r.text
    code = r.json()["code"]
    with (
        httpx.Client(base_url=base_url, timeout=15) as c,
        c.stream("GET", f"/api/lectures/{code}/events", headers=GZIP) as events,
    ):
        assert events.status_code == 200
        assert events.headers["content-type"].startswith("text/event-stream")
        assert "content-encoding" not in events.headers
        chunks = events.iter_raw()
        seen = b""
        started = time.monotonic()
        while b"\n\n" not in seen:  # the first event, read while the stream stays open
            seen += next(chunks)
        assert time.monotonic() - started < 5
        assert seen.startswith(b"id: ") and b"event: session\n" in seen
        first = json.loads(seen.split(b"data: ", 1)[1].split(b"\n\n", 1)[0])
        assert first["session"]["moment"] == client.get(f"/api/sessions/{sid}").json()["moment"]
        # the instructor's next line arrives as its own event, as plain text
        assert client.post(f"/api/sessions/{sid}/step").status_code == 200
        rest = seen.split(b"\n\n", 1)[1]
        while rest.count(b"\n\n") < 1 or b"event: session" not in rest:
            rest += next(chunks)
        event = rest[rest.index(b"id: ") :]
        data = json.loads(event.split(b"data: ", 1)[1].split(b"\n\n", 1)[0])
        assert data["session"]["moment"] == first["session"]["moment"] + 1


def test_static_files_are_the_files(client: httpx.Client) -> None:
    """Every JS and CSS file the page can load decodes to the file on disk."""
    for file in sorted(STATIC.glob("**/*.js")) + sorted(STATIC.glob("css/*.css")):
        if "swagger-ui" in file.parts:
            continue
        url = "/static/" + file.relative_to(STATIC).as_posix()
        r = raw(client, "GET", url, GZIP)
        body = r.wire  # type: ignore[attr-defined]
        if r.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        assert body == Path(file).read_bytes(), url


def test_gzip_compresses_whole_bodies_only() -> None:
    """A body sent whole, of a compressible type, over MINIMUM bytes: gzipped (ISA-L), its
    length and Vary set, the same bytes once decoded. A stream, a range, a body encoded
    already, an image and a small body go out exactly as sent."""
    text = "".join(f"{i * 0.1!r}," for i in range(MINIMUM))

    async def chunks() -> AsyncIterator[str]:
        yield text[:MINIMUM]
        yield text[MINIMUM:]

    responses: dict[str, Callable[[], Response]] = {
        "/whole": lambda: PlainTextResponse(text),
        "/stream": lambda: StreamingResponse(chunks(), media_type="text/plain"),
        "/range": lambda: PlainTextResponse(text, status_code=206),
        "/encoded": lambda: Response(b"x" * MINIMUM, headers={"content-encoding": "br"}),
        "/image": lambda: Response(b"x" * MINIMUM, media_type="image/png"),
        "/small": lambda: PlainTextResponse("tiny"),
    }

    def route(make: Callable[[], Response]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(_: Request) -> Response:
            return make()

        return endpoint

    app = Gzip(Starlette(routes=[Route(path, route(make)) for path, make in responses.items()]))

    async def fetch(path: str, headers: dict[str, str]) -> tuple[httpx.Response, bytes]:
        transport = httpx.ASGITransport(app=app)
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://test") as c,
            c.stream("GET", path, headers=headers) as r,
        ):
            return r, b"".join([part async for part in r.aiter_raw()])

    r, wire = asyncio.run(fetch("/whole", GZIP))
    assert r.headers["content-encoding"] == "gzip" and r.headers["vary"] == "Accept-Encoding"
    assert int(r.headers["content-length"]) == len(wire) < len(text) // 2
    assert gzip.decompress(wire).decode() == text
    r, wire = asyncio.run(fetch("/whole", PLAIN))
    assert "content-encoding" not in r.headers and wire == text.encode()
    for path in ("/stream", "/range", "/encoded", "/image", "/small"):
        r, wire = asyncio.run(fetch(path, GZIP))
        assert r.headers.get("content-encoding") in (None, "br"), path
        assert wire == (text.encode() if path == "/stream" else responses[path]().body), path
