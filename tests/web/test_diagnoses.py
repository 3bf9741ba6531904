"""``GET /api/sessions/{id}/diagnoses`` on a real server, SQLite and PostgreSQL: every bug
preset is named with its id, at its program line, in its explanation's words; the correct loop
is named with nothing; a student's edited loop gets the doctor's diagnosis; a program change
forgets the diagnoses of the loop before."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.program import PRESETS
from app.main import create_app
from app.settings import Settings
from support.serve import schema_url, serve_app

BUGS = [p for p in PRESETS if p.name != "correct"]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder: Path = tmp_path_factory.mktemp("diagnoses")
    database = ""
    if request.param == "postgres":
        database = schema_url(request.getfixturevalue("postgres_url"), f"diag_{os.getpid()}")
    with serve_app(create_app(Settings(data=str(folder), database_url=database))) as url:
        yield url


@pytest.fixture()
def c(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, timeout=60) as client:
        yield client


def session(c: httpx.Client, program: list[str], **setup: Any) -> str:
    r = c.post("/api/sessions", json={"program": program, **setup})
    assert r.status_code in (200, 201), r.text
    return str(r.json()["id"])


def walk(c: httpx.Client, sid: str, lines: int) -> None:
    for _ in range(lines):
        r = c.post(f"/api/sessions/{sid}/next")
        assert r.status_code in (200, 409), r.text  # backward_twice's second backward: 409


def diagnoses(c: httpx.Client, sid: str) -> list[dict[str, Any]]:
    r = c.get(f"/api/sessions/{sid}/diagnoses")
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["diagnoses"]
    for d in found:
        assert set(d) == {"bug", "file", "line", "iteration", "message", "evidence"}
    return found


@pytest.mark.parametrize("preset", BUGS, ids=[p.name for p in BUGS])
def test_every_preset_is_named_with_its_id(c: httpx.Client, preset: Any) -> None:
    setup = dict(preset.setup)
    sid = session(c, list(preset.program), **setup)
    walk(c, sid, 3 * len(preset.program))
    found = diagnoses(c, sid)
    named = [d for d in found if d["bug"] == preset.name]
    assert named, found
    assert named[0]["message"] == preset.explanation
    assert named[0]["file"] == "loop"
    assert 1 <= named[0]["line"] <= len(preset.program)


def test_the_lines_are_the_program_lines(c: httpx.Client) -> None:
    sid = session(c, ["forward", "loss", "backward", "step"])
    walk(c, sid, 8)
    [d] = diagnoses(c, sid)
    assert (d["bug"], d["line"], d["iteration"]) == ("skip_zero_grad", 3, 2)
    # the worked example's numbers: .grad held step 1's (-23.5) and backward added iteration 2's
    assert d["evidence"]["held"] == [-23.5]
    assert d["evidence"]["now"][0] == pytest.approx(-27.375)


def test_the_correct_loop_is_named_with_nothing(c: httpx.Client) -> None:
    for setup in ({}, {"scenario": "moons"}, {"scenario": "moons", "optimizer": {"kind": "adam"}}):
        sid = session(c, ["forward", "loss", "zero_grad", "backward", "step"], **setup)
        walk(c, sid, 15)
        assert diagnoses(c, sid) == []


def test_an_edited_loop_and_a_program_change(c: httpx.Client) -> None:
    sid = session(c, ["forward", "loss", "backward", "step", "step"])
    walk(c, sid, 10)
    bugs = {(d["bug"], d["line"]) for d in diagnoses(c, sid)}
    assert ("step_first", 5) in bugs and ("skip_zero_grad", 3) in bugs
    step_first = next(d for d in diagnoses(c, sid) if d["bug"] == "step_first")
    assert "already used" in step_first["message"]  # not the preset's case: the doctor's words
    correct = ["forward", "loss", "zero_grad", "backward", "step"]
    r = c.patch(f"/api/sessions/{sid}", json={"program": correct})
    assert r.status_code == 200, r.text
    walk(c, sid, 10)
    assert diagnoses(c, sid) == []


def test_an_unknown_session_is_404(c: httpx.Client) -> None:
    r = c.get("/api/sessions/nope/diagnoses")
    assert r.status_code == 404
    assert "detail" in r.json()
