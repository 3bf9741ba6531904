"""What the HTTP side of an answer costs: encoding a Session to JSON, and gzipping it.

    python bench/encode.py [--number 2000]

Builds a real moons Session (the worked lines forward, loss, zero_grad, backward, as a page
asks for them with ``?since``) through the app in this process, then times, per answer:

- the JSON encoders: the stdlib ``json.dumps`` of the dict (what Starlette's ``JSONResponse``
  does), pydantic-core's ``to_json`` (what ``as_json`` does), and orjson's ``dumps`` when it is
  importable (it writes NaN as null, which the API's contract forbids: shown for comparison);
- gzip at levels 1, 5, 6 and 9 on that answer and on the page's static files: microseconds and
  bytes, the trade the server makes per answer for the classroom's shared access point.

Nothing is asserted: the numbers go in the docs.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
import zlib
from pathlib import Path
from typing import Any

import pydantic_core
from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402


def moons_answer() -> dict[str, Any]:
    """The Session a click on backward answers with, as the page asks for it."""
    with TestClient(create_app(Settings(data=":memory:"))) as client:
        s = client.post("/api/sessions", json={"scenario": "moons"}).json()
        answer: dict[str, Any] = s
        for line in ("forward", "loss", "zero_grad", "backward"):
            answer = client.post(f"/api/sessions/{s['id']}/{line}?since=1").json()
        return answer


def micros(fn: Any, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def gzip(data: bytes, level: int) -> bytes:
    compressor = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    data = moons_answer()
    body = pydantic_core.to_json(data, inf_nan_mode="strings")
    encoders = {
        "json.dumps (stdlib, JSONResponse)": lambda: json.dumps(
            data, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode(),
        "pydantic_core.to_json (as_json)": lambda: pydantic_core.to_json(
            data, inf_nan_mode="strings"
        ),
    }
    try:
        import orjson  # type: ignore[import-not-found,unused-ignore]

        encoders["orjson.dumps (NaN -> null)"] = lambda: orjson.dumps(data)
    except ImportError:
        pass
    print(f"moons Session answer after backward: {len(body)} bytes of JSON\n")
    print("encoder | µs per answer | / pydantic-core")
    print("--- | --- | ---")
    times = {name: micros(fn, args.number) for name, fn in encoders.items()}
    base = times["pydantic_core.to_json (as_json)"]
    for name, t in times.items():
        print(f"{name} | {t:.1f} | {t / base:.2f}")

    static = ROOT / "static"
    files = [p for p in sorted(static.rglob("*")) if p.suffix in {".js", ".css"}]
    page_bytes = b"".join(p.read_bytes() for p in files if "swagger-ui" not in str(p))
    print("\ngzip level | answer µs | answer bytes | static JS+CSS µs | bytes (of", end=" ")
    print(f"{len(page_bytes)})")
    print("--- | --- | --- | --- | ---")
    for level in (1, 5, 6, 9):
        t = micros(lambda level=level: gzip(body, level), args.number)
        s = micros(lambda level=level: gzip(page_bytes, level), max(1, args.number // 100))
        print(
            f"{level} | {t:.1f} | {len(gzip(body, level))} | {s:.0f} | "
            f"{len(gzip(page_bytes, level))}"
        )


if __name__ == "__main__":
    main()
