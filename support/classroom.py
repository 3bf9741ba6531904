"""What a class's question about the next line truly has for an answer, found without the
question's own truth: a twin session (the same setup) runs the same lines, then the asked line
with POST …/next, and its Session says what happened (shared by the HTTP, browser and
PostgreSQL tests of issue 18)."""

from __future__ import annotations

import math
from typing import Any

import httpx


def flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for v in value for x in flat(v)]
    return [value]


def truth(client: httpx.Client, setup: dict[str, Any], lines: int, q: dict[str, Any]) -> list[str]:
    """The true choice ids of question ``q`` asked after ``lines`` lines of a session created
    with ``setup`` (kinds writes, raises and grad: a loss question needs the loss computed
    again, which the twin cannot show)."""
    twin = client.post("/api/sessions", json=setup).json()["id"]
    for _ in range(lines):
        assert client.post(f"/api/sessions/{twin}/next").status_code == 200
    ran = client.post(f"/api/sessions/{twin}/next")
    ids = [c["id"] for c in q["choices"]]
    if q["kind"] == "raises":
        return ["yes" if ran.status_code == 409 else "no"]
    if q["kind"] == "writes":
        writes = [] if ran.status_code == 409 else ran.json()["last"]["writes"]
        return [i for i in ids if i in writes]
    assert q["kind"] == "grad", q
    if ran.status_code == 409:
        return [c["id"] for c in q["choices"] if c["value"] == "error"]
    param = next(p for p in ran.json()["params"] if p["name"] == q["param"])
    value = None if param["grad"] is None else flat(param["grad"])[q["index"]]
    right = [
        c["id"]
        for c in q["choices"]
        if c["value"] == value
        or (isinstance(c["value"], float) and value is not None and math.isclose(c["value"], value))
    ]
    assert len(right) == 1, (q, value)
    return right


def wrong(q: dict[str, Any], right: list[str]) -> str | list[str]:
    """A choice that is not the truth, in the shape the question takes."""
    ids: list[str] = [c["id"] for c in q["choices"]]
    if q["multiple"]:
        return [i for i in ids if i not in right][:1] if right else ids[:1]
    return next(i for i in ids if i not in right)


def shaped(q: dict[str, Any], right: list[str]) -> str | list[str]:
    return right if q["multiple"] else right[0]
