"""The HTTP contract, driven over real HTTP against a live server; numbers, not just codes."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from app.web.deps import MAX_WAITING
from support.oracle import Plain
from support.serve import serve


def new(client: httpx.Client, **body: Any) -> dict[str, Any]:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def line(client: httpx.Client, sid: str, name: str, body: Any = None) -> dict[str, Any]:
    r = client.post(f"/api/sessions/{sid}/{name}", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def values(session: dict[str, Any], key: str) -> list[Any]:
    return [p[key] for p in session["params"]]


def test_healthz_and_scenarios(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    scenarios = {s["name"]: s for s in client.get("/api/scenarios").json()}
    assert scenarios["neuron"]["default_lr"] == 0.05
    assert scenarios["moons"]["default_lr"] == 0.3 and scenarios["moons"]["batch_size"] == 32
    assert scenarios["neuron"]["title"] == "the worked example"
    page = client.get("/").text  # the page's menus list the engine's scenarios
    assert all(f'<option value="{name}">{name}: ' in page for name in scenarios)


def test_worked_example_over_http(client: httpx.Client) -> None:
    s = new(client)
    assert s["scenario"] == "neuron" and s["lr"] == 0.05 and s["next_line"] == "forward"
    assert values(s, "grad") == [None, None] and s["graph"]["status"] == "empty"
    sid = s["id"]
    s = line(client, sid, "forward")
    assert s["iteration"] == 1 and s["graph"]["status"] == "built"
    assert s["last"] == {
        "line": "forward",
        "reads": ["params", "data"],
        "writes": ["graph"],
        "warnings": [],
        "result": None,
        "scaled": None,
    }
    s = line(client, sid, "loss")
    assert s["loss"] == 18.5 and s["graph"]["nodes"][0]["label"] == "MseLossBackward0"
    s = line(client, sid, "zero_grad")
    assert values(s, "grad") == [None, None]
    s = line(client, sid, "backward")
    assert values(s, "grad") == [[[-23.5]], [-8.0]] and s["graph"]["status"] == "freed"
    s = line(client, sid, "step")
    plain = Plain("neuron", 0.05)
    for name in ("forward", "loss", "zero_grad", "backward", "step"):
        plain.line(name)
    expected = [p.tolist() for p in plain.model.parameters()]
    assert values(s, "value") == expected  # exactly PyTorch's float32 values
    assert values(s, "value")[0][0][0] == pytest.approx(1.175)
    s = line(client, sid, "next")  # the cursor is where the lines left it: forward
    assert s["last"]["line"] == "forward" and s["cursor"] == 1
    s = line(client, sid, "run", {"iterations": 1})
    assert s["cursor"] == 0 and s["iteration"] == 2
    assert values(s, "value")[0][0][0] == pytest.approx(1.36875)
    assert s["history"][0] == {"n": 0, "iteration": 1, "loss": 18.5, "param": 0.0}


def test_skip_zero_grad_piles_up(client: httpx.Client) -> None:
    s = new(client, skip_zero_grad=True)
    assert s["program"] == ["forward", "loss", "backward", "step"]
    s = line(client, s["id"], "run", {"iterations": 2})
    grad_w, grad_b = values(s, "grad")
    assert grad_w[0][0] == pytest.approx(-27.375) and grad_b[0] == pytest.approx(-9.325)


def test_step_first_and_patch_and_reset(client: httpx.Client) -> None:
    s = new(client, step_first=True)
    sid = s["id"]
    s = line(client, sid, "run", {"iterations": 3})
    assert values(s, "value") == [[[0.0]], [0.0]] and s["loss"] == 18.5
    r = client.patch(f"/api/sessions/{sid}", json={"lr": 0.1, "step_first": False})
    assert r.status_code == 200
    s = r.json()
    assert s["lr"] == 0.1 and s["program"][3] == "backward" and s["toggles"]["step_first"] is False
    s = line(client, sid, "reset")
    assert s["iteration"] == 0 and s["history"] == [] and s["lr"] == 0.1
    assert values(s, "grad") == [None, None]


def test_backward_twice_is_409_in_pytorchs_words(client: httpx.Client) -> None:
    sid = new(client)["id"]
    for name in ("forward", "loss", "backward"):
        before = line(client, sid, name)
    r = client.post(f"/api/sessions/{sid}/backward")
    assert r.status_code == 409
    assert r.json()["line"] == "backward"
    assert "Trying to backward through the graph a second time" in r.json()["detail"]
    assert client.get(f"/api/sessions/{sid}").json() == before


def test_retain_graph_and_set_to_none_bodies(client: httpx.Client) -> None:
    sid = new(client)["id"]
    line(client, sid, "forward")
    line(client, sid, "loss")
    s = line(client, sid, "backward", {"retain_graph": True})
    assert s["last"]["line"] == "backward(retain_graph=True)"  # the entry, as the page shows it
    s = line(client, sid, "backward")
    assert values(s, "grad") == [[[-47.0]], [-16.0]] and s["last"]["line"] == "backward"
    s = line(client, sid, "zero_grad", {"set_to_none": False})
    assert values(s, "grad") == [[[0.0]], [0.0]]
    assert s["last"]["line"] == "zero_grad(set_to_none=False)"
    r = client.post(f"/api/sessions/{sid}/backward", json={"retain_graph": True})
    assert r.status_code == 409 and r.json()["line"] == "backward(retain_graph=True)"


def test_lines_out_of_order_are_409(client: httpx.Client) -> None:
    sid = new(client)["id"]
    for name, words in (("loss", "forward"), ("backward", "loss")):
        r = client.post(f"/api/sessions/{sid}/{name}")
        assert r.status_code == 409 and words in r.json()["detail"]
    s = line(client, sid, "step")  # the silent no-op
    assert values(s, "value") == [[[0.0]], [0.0]]


def test_moons_over_http_matches_the_lesson(client: httpx.Client) -> None:
    s = new(client, scenario="moons")
    assert [p["name"] for p in s["params"]][:2] == ["0.weight", "0.bias"]
    assert s["params"][0]["shape"] == [16, 2] and s["params"][0]["dtype"] == "float64"
    s = line(client, s["id"], "run", {"iterations": 150})
    losses = [h["loss"] for h in s["history"]]
    assert len(losses) == 150 and round(losses[0], 4) == 0.7109
    assert round(sum(losses[-5:]) / 5, 3) == 0.196


def strict_json(text: str) -> Any:
    """Parse as JSON proper: Python's json takes bare NaN and Infinity, JSON does not."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_diverging_session_is_valid_json(client: httpx.Client) -> None:
    sid = new(client, lr=100)["id"]
    r = client.post(f"/api/sessions/{sid}/run", json={"iterations": 40})
    body = strict_json(r.text)
    assert body["params"][0]["value"][0][0] in ("NaN", "Infinity", "-Infinity")
    assert body["loss"] in ("NaN", "Infinity", "-Infinity")
    out = strict_json(client.get(f"/api/sessions/{sid}/output").text)
    assert {v for v in out["line"]["y"] if isinstance(v, str)} <= {"NaN", "Infinity", "-Infinity"}
    assert any(isinstance(v, str) for v in out["line"]["y"])


BAD_CREATES = [
    {"scenario": "mnist"},
    {"lr": 0},
    {"lr": -1},
    {"lr": 101},
    {"lr": "0.1"},
    {"seed": -1},
    {"seed": 2**40},
    {"seed": 1.5},
    {"skip_zero_grad": "yes"},
    {"skip_zero_grad": 1},
    {"scenari": "neuron"},
]


@pytest.mark.parametrize("body", BAD_CREATES)
def test_bad_create_is_422(client: httpx.Client, body: dict[str, Any]) -> None:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 422 and "detail" in r.json()


@pytest.mark.parametrize("raw", ['{"lr": NaN}', '{"lr": Infinity}', '{"lr": 0.1', "[]", "nope"])
def test_nan_and_malformed_bodies_are_422(client: httpx.Client, raw: str) -> None:
    r = client.post("/api/sessions", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "detail" in r.json()


def test_bad_requests_leave_the_session_untouched(client: httpx.Client) -> None:
    sid = new(client)["id"]
    before = line(client, sid, "forward")
    bad = [
        ("patch", "", {"lr": 0}),
        ("patch", "", {"lr": float("inf")}),
        ("patch", "", {"step_first": "no"}),
        ("post", "/run", {"iterations": 0}),
        ("post", "/run", {"iterations": 1001}),
        ("post", "/run", {"iterations": "3"}),
        ("post", "/run", None),
        ("post", "/backward", {"retain_graph": 1}),
        ("post", "/zero_grad", {"set_to_none": "false"}),
    ]
    for method, path, body in bad:
        content = json.dumps(body, allow_nan=True) if body is not None else ""
        r = client.request(
            method, f"/api/sessions/{sid}{path}", content=content,
            headers={"content-type": "application/json"},
        )  # fmt: skip
        assert r.status_code == 422, (method, path, body, r.text)
    assert client.get(f"/api/sessions/{sid}").json() == before


def test_unknown_session_and_delete(client: httpx.Client) -> None:
    assert client.get("/api/sessions/nope").status_code == 404
    assert client.post("/api/sessions/nope/forward").json() == {
        "detail": "no such session (it may have expired)"
    }
    sid = new(client)["id"]
    assert client.delete(f"/api/sessions/{sid}").status_code == 204
    assert client.get(f"/api/sessions/{sid}").status_code == 404
    assert client.delete(f"/api/sessions/{sid}").status_code == 404


def test_concurrent_clicks_on_one_session_are_serialized(client: httpx.Client) -> None:
    """40 `next` calls at once: each runs whole, so 8 complete iterations equal plain PyTorch."""
    sid = new(client, scenario="moons")["id"]

    def click(_: int) -> int:
        with httpx.Client(base_url=str(client.base_url), timeout=30) as c:
            return c.post(f"/api/sessions/{sid}/next").status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(click, range(40)))
    assert codes == [200] * 40
    s = client.get(f"/api/sessions/{sid}").json()
    assert s["iteration"] == 8 and s["cursor"] == 0
    plain = Plain("moons", 0.3, 0)
    for _ in range(8):
        for name in ("forward", "loss", "zero_grad", "backward", "step"):
            plain.line(name)
    assert values(s, "value") == [p.tolist() for p in plain.model.parameters()]


def test_full_store_is_503(tmp_path: Path) -> None:
    """The store holds 2 logs, both sessions in use (in memory): a third has nowhere to go."""
    settings = Settings(max_sessions=5, store_max_sessions=2, data=str(tmp_path))
    with serve(settings) as url, httpx.Client(base_url=url) as c:
        assert c.post("/api/sessions", json={}).status_code == 201
        assert c.post("/api/sessions", json={}).status_code == 201
        r = c.post("/api/sessions", json={})
        assert r.status_code == 503 and "maximum of 2 sessions" in r.json()["detail"]


def test_sessions_past_memory_are_replayed_from_the_store(tmp_path: Path) -> None:
    """Memory holds 2 sessions: the first of 4 leaves it, and its next request replays its log
    (graph included: backward after the replay gives the worked example's gradient)."""
    settings = Settings(max_sessions=2, data=str(tmp_path))
    with serve(settings) as url, httpx.Client(base_url=url) as c:
        first = c.post("/api/sessions", json={}).json()["id"]
        c.post(f"/api/sessions/{first}/forward")
        before = c.post(f"/api/sessions/{first}/loss").json()
        for _ in range(3):
            assert c.post("/api/sessions", json={"scenario": "moons"}).status_code == 201
        again = c.get(f"/api/sessions/{first}").json()
        assert again == before
        s = c.post(f"/api/sessions/{first}/backward").json()
        assert values(s, "grad") == [[[-23.5]], [-8.0]]


def test_output_is_what_the_model_computes(client: httpx.Client) -> None:
    sid = new(client)["id"]
    line(client, sid, "run", {"iterations": 1})
    out = client.get(f"/api/sessions/{sid}/output").json()
    assert out["kind"] == "line" and out["points"] == [[1.0], [2.0], [3.0], [4.0]]
    assert out["line"]["y"][0] == pytest.approx(0.4) and out["line"]["y"][1] == pytest.approx(
        5 * 1.175 + 0.4
    )
    moons = new(client, scenario="moons")["id"]
    out = client.get(f"/api/sessions/{moons}/output", params={"size": 5}).json()
    assert out["kind"] == "boundary" and len(out["points"]) == 150
    assert len(out["p"]) == 5 and all(0 <= v <= 1 for row in out["p"] for v in row)
    assert client.get(f"/api/sessions/{moons}/output", params={"size": 500}).status_code == 422
    assert client.get(f"/api/sessions/{moons}").json()["graph"]["status"] == "empty"


def test_history_since_sends_only_the_new_points(client: httpx.Client) -> None:
    sid = new(client, scenario="parabola")["id"]
    s = line(client, sid, "run", {"iterations": 600})
    full = s["history"]
    assert s["losses"] == 600 and [p["n"] for p in full] == list(range(600))
    r = client.post(f"/api/sessions/{sid}/run", params={"since": 600}, json={"iterations": 600})
    s = r.json()
    assert s["losses"] == 1200 and [p["n"] for p in s["history"]] == list(range(600, 1200))
    kept = client.get(f"/api/sessions/{sid}").json()["history"]
    assert len(kept) == 1000 and kept[0]["n"] == 200  # the newest 1000 are kept
    assert kept[400:] == s["history"] and kept[:400] == full[200:]
    assert client.get(f"/api/sessions/{sid}", params={"since": 5000}).json()["history"] == []
    assert client.get(f"/api/sessions/{sid}", params={"since": 2**53}).json()["history"] == []
    for bad in (-1, 2**53 + 1, 10**30, "x"):
        assert client.get(f"/api/sessions/{sid}", params={"since": bad}).status_code == 422
    s = client.post(f"/api/sessions/{sid}/reset", params={"since": 1200}).json()
    assert s["losses"] == 0 and s["history"] == []


def test_a_flooded_session_answers_429_and_recovers() -> None:
    """While a long request holds a session, MAX_WAITING more queue for it, in order, with one
    worker thread between them (waiting for the lock); the rest get a 429."""
    app = create_app()

    async def flood() -> tuple[list[int], int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            sid = (await c.post("/api/sessions", json={})).json()["id"]
            session = app.state.sessions.get(sid)
            session.lock.acquire()  # as a long run would
            calls = [c.post(f"/api/sessions/{sid}/next") for _ in range(MAX_WAITING + 1)]
            calls.append(c.get(f"/api/sessions/{sid}/output"))  # no way round the cap
            tasks = [asyncio.ensure_future(call) for call in calls]
            while session.waiting < MAX_WAITING:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            threads = anyio.to_thread.current_default_thread_limiter().borrowed_tokens
            session.lock.release()
            codes = [r.status_code for r in await asyncio.gather(*tasks)]
            after = (await c.get(f"/api/sessions/{sid}")).json()
            # the queued lines all ran, in order: as the same lines one at a time
            alone = (await c.post("/api/sessions", json={})).json()["id"]
            for _ in range(MAX_WAITING):
                await c.post(f"/api/sessions/{alone}/next")
            expected = (await c.get(f"/api/sessions/{alone}")).json()
            assert {**after, "id": alone} == expected and session.waiting == 0
            assert (after["iteration"], after["cursor"], after["history"][0]["loss"]) == (
                4,
                1,
                18.5,
            )
            return codes, int(threads)

    codes, threads = asyncio.run(flood())
    assert threads == 1  # sixteen waiting, one thread: a flood cannot fill the thread pool
    assert codes == [200] * MAX_WAITING + [429, 429]  # the output view queued no seventeenth


def test_a_tiny_lr_on_the_parabola_is_no_500(client: httpx.Client) -> None:
    """1 - eta h / 2 rounds to 1 below eta h ~ 2e-16; the theory must not divide by zero."""
    sid = new(client, scenario="parabola", skip_zero_grad=True)["id"]
    r = client.patch(f"/api/sessions/{sid}", json={"lr": 1e-18})
    assert r.status_code == 200 and r.json()["theory"]["without_zero_grad"]["period"] > 1e8
    s = line(client, sid, "run", {"iterations": 3})
    assert s["params"][0]["value"][0] > 0  # it moved, by a little
    s = new(client, scenario="parabola", lr=1e-300, curvature=1e-30)  # eta h underflows
    assert s["theory"]["without_zero_grad"]["period"] is None


def test_a_line_sent_again_with_its_moment_runs_once(client: httpx.Client) -> None:
    """Issue 27: the page sends the moment a line is meant to make; sent again after its
    connection dropped without an answer, the line already ran: the same Session, no rerun."""
    sid = client.post("/api/sessions", json={"scenario": "neuron"}).json()["id"]
    for moment, line in enumerate(["forward", "loss", "zero_grad", "backward"], start=1):
        first = client.post(f"/api/sessions/{sid}/next?moment={moment}")
        assert first.status_code == 200, first.text
        assert first.json()["last"]["line"] == line
        again = client.post(f"/api/sessions/{sid}/next?moment={moment}")  # the retry
        assert again.status_code == 200 and again.json() == first.json()
        assert first.json()["moment"] == moment
    again = client.post(f"/api/sessions/{sid}/backward?moment=4").json()
    assert [p["grad"] for p in again["params"]] == [[[-23.5]], [-8.0]]  # once, not -47
    timeline = client.get(f"/api/sessions/{sid}/timeline").json()
    assert [m["n"] for m in timeline["moments"]] == [0, 1, 2, 3, 4]
    # a moment that is neither the next nor the newest: refused, nothing runs
    late = client.post(f"/api/sessions/{sid}/step?moment=3")
    assert late.status_code == 409 and "stands at moment 4" in late.json()["detail"]
    early = client.post(f"/api/sessions/{sid}/step?moment=9")
    assert early.status_code == 409
    stepped = client.post(f"/api/sessions/{sid}/step?moment=5").json()
    assert stepped["moment"] == 5 and stepped["params"][0]["value"] == [[1.1750000715255737]]
    assert client.post(f"/api/sessions/{sid}/step?moment=0").status_code == 422
