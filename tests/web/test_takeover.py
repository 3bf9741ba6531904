"""Two servers on one store take a session in turns over HTTP (owner epochs): the one asked
answers from the log as it stands, never from a stale copy in its memory."""

from __future__ import annotations

import os
import tempfile

import httpx
import pytest

from app.settings import Settings

from support.serve import schema_url, serve


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_two_servers_take_a_session_in_turns(kind: str, request: pytest.FixtureRequest) -> None:
    data = tempfile.mkdtemp(prefix="loop-stepper-takeover-")
    url = ""
    if kind == "postgres":
        url = schema_url(request.getfixturevalue("postgres_url"), f"takeover_{os.getpid()}")
    settings = Settings(data=data, database_url=url)
    with (
        serve(settings) as one,
        serve(settings) as two,
        httpx.Client(base_url=one, timeout=15) as a,
        httpx.Client(base_url=two, timeout=15) as b,
    ):
        sid = a.post("/api/sessions", json={"scenario": "neuron"}).json()["id"]
        for _ in range(4):
            a.post(f"/api/sessions/{sid}/next")
        assert b.get(f"/api/sessions/{sid}").json()["moment"] == 4  # b replays and claims it
        stepped = b.post(f"/api/sessions/{sid}/next").json()
        assert stepped["moment"] == 5 and stepped["last"]["line"] == "step"
        # a still holds its copy at moment 4: a read there answers from the log (moment 5)
        assert a.get(f"/api/sessions/{sid}").json() == stepped
        after = a.post(f"/api/sessions/{sid}/next").json()  # and a line goes on from it
        assert after["moment"] == 6 and after["last"]["line"] == "forward"
        assert b.post(f"/api/sessions/{sid}/back").json()["moment"] == 5
        timeline = a.get(f"/api/sessions/{sid}/timeline").json()
        assert [m["line"] for m in timeline["moments"]] == [
            None, "forward", "loss", "zero_grad", "backward", "step", "forward"
        ]  # fmt: skip
        assert timeline["moment"] == 5  # b's back, seen by a
        w, bias = (p["value"] for p in a.post(f"/api/sessions/{sid}/back").json()["params"])
        assert (w[0][0], bias[0]) == (0.0, 0.0)  # moment 4: before the step
