"""Hardening: security headers on every answer, the body limit, no CORS, offline /docs."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from pydantic import ValidationError

from app.settings import Settings
from support.serve import serve

MAX_BODY = Settings().max_body  # the default the server runs with
PATHS = [
    ("GET", "/"),
    ("GET", "/healthz"),
    ("GET", "/api/scenarios"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/static/vendor/swagger-ui/init.js"),
    ("GET", "/api/sessions/not-a-session"),  # 404
    ("POST", "/api/sessions/not-a-session/next"),  # 404
    ("GET", "/nowhere"),  # 404 from the router
    ("DELETE", "/healthz"),  # 405
]


def csp_of(response: httpx.Response) -> dict[str, str]:
    policy = response.headers["content-security-policy"]
    return {d.split()[0]: d.strip() for d in policy.split(";") if d.strip()}


@pytest.mark.parametrize(("method", "path"), PATHS)
def test_every_response_carries_the_security_headers(
    client: httpx.Client, method: str, path: str
) -> None:
    r = client.request(method, path)
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["x-frame-options"] == "DENY"
    csp = csp_of(r)
    assert csp["default-src"] == "default-src 'self'"
    assert csp["script-src"] == "script-src 'self'"  # no inline script, no eval, no CDN
    assert csp["frame-ancestors"] == "frame-ancestors 'none'"
    assert csp["object-src"] == "object-src 'none'"
    assert "http" not in r.headers["content-security-policy"]  # nothing from another origin
    if path != "/docs":
        assert "unsafe-inline" not in r.headers["content-security-policy"]


def test_422_and_409_carry_the_headers_too(client: httpx.Client) -> None:
    assert client.post("/api/sessions", json={"scenario": "nope"}).status_code == 422
    sid = client.post("/api/sessions", json={}).json()["id"]
    r = client.post(f"/api/sessions/{sid}/loss")
    assert r.status_code == 409
    assert "content-security-policy" in r.headers
    client.delete(f"/api/sessions/{sid}")


def test_the_page_and_the_docs_load_nothing_from_outside(client: httpx.Client) -> None:
    for path in ("/", "/?embed=1", "/?compare=skip_zero_grad", "/docs"):
        html = client.get(path).text
        urls = re.findall(r'(?:src|href)="([^"]*)"', html)
        assert len(urls) >= 3
        for url in urls:
            # relative to where the page was served: no scheme (a proxy's TLS would make an
            # http:// URL mixed content) and no leading "/" (it would escape a path prefix)
            relative = not url.startswith("/") and not re.match(r"[a-z][a-z0-9+.-]*:", url)
            assert relative or url.startswith("data:"), url
        assert "<script>" not in html  # no inline script: the CSP would block it
    assert client.get("/static/vendor/swagger-ui/swagger-ui-bundle.js").status_code == 200
    assert client.get("/static/vendor/swagger-ui/swagger-ui.css").status_code == 200


def test_the_scripts_call_the_api_relative_to_the_page(client: httpx.Client) -> None:
    """Fetches and the docs' schema URL never start at the server's root (the browser tests
    behind nginx and Caddy show the whole page staying under the prefix)."""
    api = client.get("/static/js/api.js").text
    assert '"api/sessions"' in api and "`api/sessions/${" in api
    for name in ("api", "stepper", "compare", "state", "main"):
        lines = client.get(f"/static/js/{name}.js").text.splitlines()
        text = "\n".join(line for line in lines if not line.lstrip().startswith("//"))
        assert not re.search(r"""["'`]/(api|docs|static|openapi|\?)""", text), name
    init = client.get("/static/vendor/swagger-ui/init.js").text
    assert 'url: "openapi.json"' in init


@pytest.mark.parametrize("path", ["/", "/docs", "/api/scenarios", "/static/css/page.css"])
def test_frame_ancestors_set_allows_those_origins_only(path: str) -> None:
    origins = "https://moodle.school.edu https://*.instructure.com"
    with serve(Settings(frame_ancestors=origins)) as url:
        r = httpx.get(url + path)
    csp = csp_of(r)
    assert csp["frame-ancestors"] == f"frame-ancestors {origins}"
    # X-Frame-Options can only say DENY or SAMEORIGIN: it would veto the LMS, so it goes
    assert "x-frame-options" not in r.headers
    assert csp["script-src"] == "script-src 'self'"  # the rest of the policy stays as strict
    assert r.headers["x-content-type-options"] == "nosniff"


def test_frame_ancestors_default_forbids_framing(client: httpx.Client) -> None:
    assert Settings().frame_ancestors == ""
    for path in ("/", "/?embed=1", "/docs"):
        r = client.get(path)
        assert csp_of(r)["frame-ancestors"] == "frame-ancestors 'none'"
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers.get_list("x-frame-options") == ["DENY"]


@pytest.mark.parametrize(
    "value",
    [
        "https://lms.edu; script-src *",
        "https://lms.edu,https://x.edu",
        "'unsafe-inline'",
        "https://lms.edu\r\nSet-Cookie: a=b",
        "'self' \"https://x\"",
    ],
)
def test_frame_ancestors_that_would_break_the_policy_are_refused(value: str) -> None:
    with pytest.raises(ValidationError, match="frame_ancestors"):
        Settings(frame_ancestors=value)


def test_frame_ancestors_accepts_origins_and_keywords() -> None:
    value = (
        "  'self'   https://moodle.school.edu:8443 https://*.instructure.com http://127.0.0.1:9 "
    )
    assert Settings(frame_ancestors=value).frame_ancestors == (
        "'self' https://moodle.school.edu:8443 https://*.instructure.com http://127.0.0.1:9"
    )


@pytest.mark.parametrize(("value", "kept"), [("/loop-stepper/", "/loop-stepper"), ("", "")])
def test_root_path_setting(value: str, kept: str) -> None:
    assert Settings(root_path=value).root_path == kept


@pytest.mark.parametrize("value", ["loop-stepper", "/a b", "https://x/y"])
def test_root_path_must_be_a_path(value: str) -> None:
    with pytest.raises(ValidationError, match="root_path"):
        Settings(root_path=value)


# a route held to the general limit (a create or a check has its own, for a spec's points)
LINE = "/api/sessions/none/run"


def test_a_body_over_the_limit_is_413(client: httpx.Client) -> None:
    r = client.post(LINE, content=b" " * (MAX_BODY + 1), headers=json_type())
    assert r.status_code == 413
    assert "too large" in r.json()["detail"]
    assert r.headers["x-content-type-options"] == "nosniff"
    # a body at the limit is read (and rejected as bad JSON, not as too large)
    r = client.post(LINE, content=b" " * MAX_BODY, headers=json_type())
    assert r.status_code == 422


def test_a_create_takes_a_spec_up_to_its_own_limit(client: httpx.Client) -> None:
    limit = Settings().spec_max_body
    r = client.post("/api/sessions", content=b" " * (limit + 1), headers=json_type())
    assert r.status_code == 413
    assert r.json() == {"detail": f"a spec is at most {limit} bytes (LOOP_STEPPER_SPEC_MAX_BODY)"}
    r = client.post("/api/models/check", content=b" " * limit, headers=json_type())
    assert r.status_code == 422  # read whole: bad JSON, not too large


def test_a_chunked_body_over_the_limit_is_413(client: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(64):  # 64 KiB in 1 KiB chunks, no Content-Length
            yield b" " * 1024

    r = client.post(LINE, content=chunks(), headers=json_type())
    assert r.status_code == 413
    assert r.json() == {"detail": f"request body too large: at most {MAX_BODY} bytes"}


def test_a_small_chunked_body_still_works(client: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"scenario":'
        yield b' "moons"}'

    r = client.post("/api/sessions", content=chunks(), headers=json_type())
    assert r.status_code == 201, r.text
    assert r.json()["scenario"] == "moons"
    client.delete(f"/api/sessions/{r.json()['id']}")


def test_a_lying_content_length_is_refused_before_reading(base_url: str) -> None:
    # declares 1 MB and sends nothing: refused at once from the header, no wait for the body
    url = urlsplit(base_url)
    with socket.create_connection((url.hostname, url.port), timeout=5) as s:
        s.sendall(
            b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000000\r\n\r\n"
        )
        head = s.recv(4096).split(b"\r\n", 1)[0]
    assert head == b"HTTP/1.1 413 Request Entity Too Large"


def test_no_cors_for_another_origin(client: httpx.Client) -> None:
    evil = {"Origin": "http://evil.example"}
    preflight = client.options(
        "/api/sessions",
        headers={**evil, "Access-Control-Request-Method": "POST"},
    )
    simple = client.get("/api/scenarios", headers=evil)
    created = client.post("/api/sessions", json={}, headers=evil)
    for r in (preflight, simple, created):
        assert not [h for h in r.headers if h.lower().startswith("access-control-")]
    assert preflight.status_code in (400, 405)
    client.delete(f"/api/sessions/{created.json()['id']}")


def test_session_ids_are_long_random_and_unrelated(client: httpx.Client) -> None:
    ids = [client.post("/api/sessions", json={}).json()["id"] for _ in range(20)]
    assert len(set(ids)) == 20
    assert all(len(i) >= 22 for i in ids)  # 16 random bytes, url-safe base64
    prefixes = {i[:4] for i in ids}
    assert len(prefixes) > 15  # not a counter or a timestamp
    for i in ids:
        client.delete(f"/api/sessions/{i}")


def test_sessions_cannot_be_listed(client: httpx.Client) -> None:
    r = client.get("/api/sessions")
    assert r.status_code == 405  # there is no index of sessions to enumerate
    assert "id" not in r.text


def test_a_deleted_session_cannot_be_reached(client: httpx.Client) -> None:
    sid = client.post("/api/sessions", json={}).json()["id"]
    assert client.delete(f"/api/sessions/{sid}").status_code == 204
    assert client.post(f"/api/sessions/{sid}/next").status_code == 404
    assert client.get(f"/api/sessions/{sid[:-1]}").status_code == 404


@pytest.mark.parametrize(
    "body",
    [b"[" * 5000 + b"]" * 5000, b'{"scenario": "\xff\xfe"}', b"0O\xc3"],
    ids=["nested-past-the-parser", "not-utf8", "truncated-utf8"],
)
def test_unparsable_json_is_a_422_not_a_400(client: httpx.Client, body: bytes) -> None:
    for path in ("/api/sessions", "/api/sessions/x/zero_grad"):
        r = client.post(path, content=body, headers=json_type())
        assert r.status_code == 422, r.text
        assert r.json()["detail"][0]["type"] == "json_invalid"


def test_405_names_every_method_of_the_path(client: httpx.Client) -> None:
    r = client.request("OPTIONS", "/api/sessions/some-id")
    assert r.status_code == 405
    assert r.headers["allow"] == "GET, PATCH, DELETE"
    assert client.put("/api/sessions").headers["allow"] == "POST"


def json_type() -> dict[str, str]:
    return {"Content-Type": "application/json"}


def test_served_by_names_the_process_on_every_answer_only_when_set(
    client: httpx.Client, tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert "x-served-by" not in client.get("/healthz").headers  # the default: no header
    settings = Settings(served_by="app7", data=str(tmp_path_factory.mktemp("served")))
    with serve(settings) as url, httpx.Client(base_url=url) as c:
        for r in (c.get("/healthz"), c.get("/api/sessions/nope"), c.get("/static/css/page.css")):
            assert r.headers["x-served-by"] == "app7", r.url
        assert c.get("/api/sessions/nope").json() == {
            "detail": "no such session (it may have expired)"
        }
    with pytest.raises(ValidationError, match="served_by is a short name"):
        Settings(served_by="a b\r\nX-Evil: 1")
