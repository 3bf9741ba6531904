"""Single flight (issue 38, a Lab built once per setup): a class creating a model nobody created
before, all at once, has its body checked once and one Lab built; the others wait for that one
and start as their log alone, with the same answer; each one's first click is its own."""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from app.web import api, setups
from app.web.flights import Flights
from support.digits import DIGITS, MLP
from support.serve import serve_app

BODY = {"model": MLP, "data": DIGITS, "standardize": True, "batch_size": 32, "seed": 11}


def test_a_class_creating_a_new_model_at_once_checks_and_builds_it_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = create_app(Settings(data=tempfile.mkdtemp(prefix="loop-stepper-flights-")))
    checks: list[int] = []
    builds: list[int] = []
    check = setups.spec_setup  # as api.py calls it

    def counted_check(*args: Any) -> Any:
        checks.append(1)
        return check(*args)

    monkeypatch.setattr(api, "spec_setup", counted_check)
    with serve_app(app) as url:
        copies = app.state.copies
        create = copies.create

        def counted_create(setup: Any) -> Any:
            builds.append(1)
            return create(setup)

        monkeypatch.setattr(copies, "create", counted_create)

        async def burst() -> list[httpx.Response]:
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                return list(
                    await asyncio.gather(
                        *(client.post("/api/sessions", json=BODY) for _ in range(40))
                    )
                )

        answers = asyncio.run(burst())
        assert [r.status_code for r in answers] == [201] * 40
        assert (len(checks), len(builds)) == (1, 1)
        sessions = [r.json() for r in answers]
        assert len({s.pop("id") for s in sessions}) == 40
        assert all(s == sessions[0] for s in sessions)
        with httpx.Client(base_url=url, timeout=60) as client:
            firsts = [
                client.post(f"/api/sessions/{r.json()['id']}/forward").json() for r in answers[:5]
            ]
        assert {f["iteration"] for f in firsts} == {1}
        assert all(f["params"] == firsts[0]["params"] for f in firsts)


def test_a_failed_first_leaves_the_others_to_do_it_themselves() -> None:
    flights = Flights()
    done: list[str] = []

    async def first() -> None:
        with pytest.raises(RuntimeError):
            async with flights.flight("k"):
                await asyncio.sleep(0.01)
                raise RuntimeError("the check failed")

    async def second() -> None:
        await asyncio.sleep(0)  # after the first took off
        await flights.after("k")
        done.append("waited")
        async with flights.flight("k"):
            done.append("did it")

    async def both() -> None:
        await asyncio.gather(first(), second())
        await flights.after("k")  # nothing under way: at once

    asyncio.run(both())
    assert done == ["waited", "did it"]
