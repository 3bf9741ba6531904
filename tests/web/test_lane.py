"""The clicks' lane: which requests it takes, and that what it answers is what the API's own
route answers for the same click (the same Session, the same errors)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.routing import Match

from app.web.api import CLICKS, CLICKS_UNDER
from app.web.lane import SINCE, ClickLane

LANE = ClickLane(CLICKS_UNDER, CLICKS)
SID = "AbCdEfGhIjKlMnOpQrStUv"


def scope(
    path: str,
    query: bytes = b"",
    method: str = "POST",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "query_string": query,
        "headers": [(b"host", b"x"), (b"content-length", b"0")] if headers is None else headers,
    }


@pytest.mark.parametrize("name", sorted(CLICKS))
@pytest.mark.parametrize("query", [b"", b"since=0", b"since=17", b"since=9007199254740992"])
def test_the_lane_takes_a_click_as_the_page_sends_it(name: str, query: bytes) -> None:
    match, child = LANE.matches(scope(f"/api/sessions/{SID}/{name}", query))
    assert match is Match.FULL
    assert child["path_params"] == {"session_id": SID}
    assert child["endpoint"] is CLICKS[name]
    assert child[SINCE] == (int(query.partition(b"=")[2] or 0), None)


@pytest.mark.parametrize(
    ("query", "read"),
    [(b"moment=3", (0, 3)), (b"since=2&moment=9", (2, 9)), (b"moment=5&since=1", (1, 5))],
)
def test_the_lane_takes_the_moment_a_line_is_meant_to_make(
    query: bytes, read: tuple[int, int]
) -> None:
    match, child = LANE.matches(scope(f"/api/sessions/{SID}/next", query))
    assert match is Match.FULL and child[SINCE] == read


@pytest.mark.parametrize(
    "query", [b"moment=0", b"moment=-1", b"moment=1&moment=2", b"since=1&x=2", b"moment=a"]
)
def test_other_moments_go_to_the_api_to_be_refused(query: bytes) -> None:
    assert LANE.matches(scope(f"/api/sessions/{SID}/next", query))[0] is Match.NONE


def test_under_a_root_path_the_lane_reads_the_path_after_it() -> None:
    """Behind a proxy under a path (``--root-path``) the ASGI path starts with it."""
    under = {**scope(f"/stepper/api/sessions/{SID}/step", b"since=4"), "root_path": "/stepper"}
    match, child = LANE.matches(under)
    assert match is Match.FULL and child["path_params"] == {"session_id": SID}
    assert child["endpoint"] is CLICKS["step"]
    # an app that is not under one sees the plain path
    assert LANE.matches(scope(f"/api/sessions/{SID}/step"))[0] is Match.FULL


@pytest.mark.parametrize(
    "request_scope",
    [
        scope(f"/api/sessions/{SID}/next", method="GET"),
        scope(f"/api/sessions/{SID}/run"),  # heavy, and has a body: the API's route
        scope(f"/api/sessions/{SID}/rewind"),
        scope(f"/api/sessions/{SID}/next/"),
        scope("/api/sessions//next"),
        scope(f"/api/sessions/{SID}"),
        scope(f"/api/sessionsX/{SID}/next"),
        scope(f"/api/sessions/{SID}/next", b"since=-1"),
        scope(f"/api/sessions/{SID}/next", b"since="),
        scope(f"/api/sessions/{SID}/next", b"since=1.5"),
        scope(f"/api/sessions/{SID}/next", b"since=9007199254740993"),  # past 2**53
        scope(f"/api/sessions/{SID}/next", b"since=1&since=2"),
        scope(f"/api/sessions/{SID}/next", b"since=1&x=2"),
        scope(f"/api/sessions/{SID}/next", b"x=1"),
        scope(f"/api/sessions/{SID}/backward", headers=[(b"content-length", b"24")]),
        scope(f"/api/sessions/{SID}/zero_grad", headers=[(b"transfer-encoding", b"chunked")]),
        {**scope(f"/other/api/sessions/{SID}/next"), "root_path": "/stepper"},
        {**scope(f"/stepperapi/sessions/{SID}/next"), "root_path": "/stepper"},
        {"type": "websocket", "path": f"/api/sessions/{SID}/next", "query_string": b""},
    ],
)
def test_anything_else_goes_to_the_api_routes(request_scope: dict[str, Any]) -> None:
    assert LANE.matches(request_scope)[0] is Match.NONE


def twins(client: httpx.Client) -> tuple[str, str]:
    ids = []
    for _ in range(2):
        r = client.post("/api/sessions", json={"scenario": "moons", "seed": 3})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    return ids[0], ids[1]


def test_a_click_by_the_lane_answers_what_the_api_route_answers(client: httpx.Client) -> None:
    """One session clicked as the page clicks (the lane), its twin with a query parameter the
    lane does not take (the API's route, which ignores it): the same Sessions, line by line."""
    lane, api = twins(client)
    lines = ["forward", "loss", "zero_grad", "backward", "step", "next", "next", "reset", "next"]
    for k, line in enumerate(lines):
        by_lane = client.post(f"/api/sessions/{lane}/{line}?since={k}")
        by_api = client.post(f"/api/sessions/{api}/{line}?since={k}&via=api")
        assert by_lane.status_code == by_api.status_code == 200, (line, by_lane.text)
        a, b = by_lane.json(), by_api.json()
        assert a.pop("id") == lane and b.pop("id") == api
        assert a == b, line
        assert by_lane.headers["content-type"] == by_api.headers["content-type"]
    assert a["moment"] == 1  # reset started over; one line since


def test_the_lane_answers_errors_in_the_apps_words(client: httpx.Client) -> None:
    missing = client.post("/api/sessions/no-such-session/next")
    assert missing.status_code == 404
    assert missing.json() == {"detail": "no such session (it may have expired)"}

    sid, _ = twins(client)
    for line in ("forward", "loss", "backward"):
        assert client.post(f"/api/sessions/{sid}/{line}").status_code == 200
    twice = client.post(f"/api/sessions/{sid}/backward")
    assert twice.status_code == 409
    assert "Trying to backward through the graph a second time" in twice.json()["detail"]
    assert twice.headers["x-content-type-options"] == "nosniff"  # the security layer still wraps it


def test_a_since_the_lane_refuses_is_validated_by_the_api(client: httpx.Client) -> None:
    sid, _ = twins(client)
    r = client.post(f"/api/sessions/{sid}/next?since=-1")
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "since"]
    # the session was not touched
    assert client.get(f"/api/sessions/{sid}").json()["moment"] == 0


def test_a_body_still_reaches_its_route(client: httpx.Client) -> None:
    """``zero_grad(set_to_none=False)`` comes with a body: the API's route reads it."""
    sid, _ = twins(client)
    for line in ("forward", "loss", "backward"):
        assert client.post(f"/api/sessions/{sid}/{line}").status_code == 200
    r = client.post(f"/api/sessions/{sid}/zero_grad", json={"set_to_none": False})
    assert r.status_code == 200, r.text
    params = r.json()["params"]
    assert params and all(p["grad"] is not None for p in params)  # zeros, not None
    assert all(set(_flat(p["grad"])) == {0} for p in params)


def _flat(value: Any) -> list[float]:
    return [x for v in value for x in _flat(v)] if isinstance(value, list) else [value]
