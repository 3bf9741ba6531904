"""Your own model and data (issue 28): ``python bench/models.py`` (~1-2 min).

Starts the real server (bench/server.py's settings) on a free loopback port and measures, for
the digits MLP (``load_digits``, 64-128-64-10, standardized, batch 64) and the small CNN on
digits (``Unflatten`` to 1 x 8 x 8, ``Conv2d(8, 3)``, ``ReLU``, ``MaxPool2d(2)``, ``Flatten``,
``Linear(10)``):

- creating a session: p50 over ``--creates`` creates (a spec seen before: its data and seeded
  model are cached; the first create of a spec is reported apart);
- a click's server time (its ``Server-Timing``) against the same line in a plain PyTorch loop
  in this process (one thread, as the server): target ≤ 2 x plain + 1 ms, per line of the loop;
- a click's answer on the wire (gzip) and a first paint of the page with it (the page, its
  scripts and styles, gzip, plus the create's answer): targets ≤ 30 KB and ≤ 150 KB;
- ``--students`` (300) clicking the digits MLP about once a second for ``--seconds``, against
  the same crowd on ``/healthz``: p99 ratio ≤ 3, 0 errors.

Prints one Markdown table; nothing is asserted (the numbers go in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.classroom import app_seconds, close, crowd, every_second, health, line  # noqa: E402
from bench.server import pct, server  # noqa: E402
from support.digits import CNN, DIGITS, MLP, cnn, mlp  # noqa: E402
from support.table import markdown  # noqa: E402

MODELS: dict[str, list[dict[str, Any]]] = {"digits MLP": MLP, "digits CNN": CNN}
LOOP = ["zero_grad", "forward", "loss", "backward", "step"]


def body(model: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": model, "data": DIGITS, "standardize": True, "batch_size": 64, "lr": 0.1}


def plain_lines(make: list[nn.Module], repeats: int) -> dict[str, float]:
    """Each line's median seconds in a plain PyTorch loop on the same data (one thread)."""
    x, y = load_digits(return_X_y=True)
    x_train, _, y_train, _ = train_test_split(x, y, test_size=0.25, stratify=y, random_state=0)
    mean, std = x_train.mean(0), x_train.std(0)
    xt = torch.tensor((x_train - mean) / np.where(std == 0, 1, std)).float()
    yt = torch.tensor(y_train)
    torch.manual_seed(0)
    model = nn.Sequential(*make)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    times: dict[str, list[float]] = {e: [] for e in LOOP}
    rng = np.random.default_rng(0)
    out = loss = None
    for _ in range(repeats):
        idx = torch.from_numpy(rng.permutation(len(yt))[:64])
        for entry in LOOP:
            t0 = time.perf_counter()
            if entry == "zero_grad":
                optimizer.zero_grad()
            elif entry == "forward":
                out = model(xt[idx])
            elif entry == "loss":
                loss = loss_fn(out, yt[idx])
            elif entry == "backward":
                assert loss is not None
                loss.backward()
            else:
                optimizer.step()
            times[entry].append(time.perf_counter() - t0)
    return {e: float(np.median(t)) for e, t in times.items()}


def layers_of(name: str) -> list[nn.Module]:
    return mlp() if name == "digits MLP" else cnn()


def gz(data: bytes) -> int:
    return len(gzip.compress(data, 6))


def first_paint(http: httpx.Client) -> int:
    """The page and everything it loads before its first session (gzip), as a browser would
    fetch it (its scripts by following the imports)."""
    page = http.get("/").text
    total = gz(page.encode())
    seen: set[str] = set()
    todo = [
        "static/js/stepper.js",
        "static/js/lecture.js",
        "static/css/page.css",
        "static/css/lesson.css",
    ]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = http.get("/" + path).text
        total += gz(text.encode())
        base = path.rsplit("/", 1)[0]
        for found in re.findall(r'from "\./([^"]+)"|from "\.\./([^"]+)"', text):
            here, up = found
            todo.append(f"{base}/{here}" if here else f"{base.rsplit('/', 1)[0]}/{up}")
    return total


async def students(
    url: str, sids: list[str], seconds: float
) -> tuple[list[float], list[float], int]:
    """Each student clicks Next line once a second, then the same crowd asks /healthz once a
    second: both latencies, and the errors of both."""
    clients = await crowd(url, len(sids))
    for c, sid in zip(clients, sids, strict=True):
        c.sid = sid
    lines, errors, _ = await every_second(clients, seconds, line)
    healthz, health_errors, _ = await every_second(clients, seconds, health)
    await close(clients)
    return lines, healthz, errors + health_errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=30)
    parser.add_argument("--clicks", type=int, default=60)
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as data, server(data) as (url, _pid):
        http = httpx.Client(base_url=url, timeout=120, headers={"Accept-Encoding": "gzip"})
        paint = first_paint(http)
        sids: list[str] = []
        for name, model in MODELS.items():
            t0 = time.perf_counter()
            first = http.post("/api/sessions", json=body(model))
            first_ms = (time.perf_counter() - t0) * 1e3
            created = []
            for _ in range(args.creates):
                t0 = time.perf_counter()
                r = http.post("/api/sessions", json=body(model))
                created.append(time.perf_counter() - t0)
                assert r.status_code == 201, r.text
                if name == "digits MLP":
                    sids.append(r.json()["id"])
            p50 = pct(created, 0.5) * 1e3
            rows.append(
                (
                    f"{name}: create (p50 of {args.creates}; the spec's first {first_ms:.0f} ms)",
                    f"{p50:.1f} ms",
                    "≤ 100 ms",
                    "yes" if p50 <= 100 else "**no**",
                )
            )
            sid = first.json()["id"]
            app: dict[str, list[float]] = {e: [] for e in LOOP}
            sizes: list[int] = []
            for _ in range(args.clicks // len(LOOP)):
                for entry in LOOP:
                    r = http.post(f"/api/sessions/{sid}/{entry}")
                    app[entry].append(app_seconds(r.headers.get("Server-Timing", "")))
                    sizes.append(gz(r.content))
            plain = plain_lines(layers_of(name), args.clicks)
            worst = max(float(np.median(app[e])) - 2 * plain[e] - 1e-3 for e in LOOP)
            detail = ", ".join(
                f"{e} {np.median(app[e]) * 1e3:.2f}/{plain[e] * 1e3:.2f}" for e in LOOP
            )
            rows.append(
                (
                    f"{name}: a click's server time / plain PyTorch (ms, median)",
                    detail,
                    "≤ 2 x plain + 1 ms",
                    "yes" if worst <= 0 else "**no**",
                )
            )
            answer = max(sizes) / 1024
            rows.append(
                (
                    f"{name}: a click's answer (gzip, largest)",
                    f"{answer:.1f} KB",
                    "≤ 30 KB",
                    "yes" if answer <= 30 else "**no**",
                )
            )
            total = (paint + gz(first.content)) / 1024
            rows.append(
                (
                    f"{name}: first paint (page + scripts + create, gzip)",
                    f"{total:.0f} KB",
                    "≤ 150 KB",
                    "yes" if total <= 150 else "**no**",
                )
            )
        while len(sids) < args.students:
            sids.append(http.post("/api/sessions", json=body(MLP)).json()["id"])
        lines, healthz, errors = asyncio.run(students(url, sids[: args.students], args.seconds))
        ratio = pct(lines, 0.99) / pct(healthz, 0.99)
        rows.append(
            (
                f"{args.students} students clicking the MLP once a second, {args.seconds:.0f} s",
                f"p99 {pct(lines, 0.99) * 1e3:.1f} ms ÷ /healthz p99 "
                f"{pct(healthz, 0.99) * 1e3:.1f} ms = {ratio:.2f}; {errors} errors",
                "≤ 3, 0 errors",
                "yes" if ratio <= 3 and errors == 0 else "**no**",
            )
        )
        http.close()
    print(markdown(("measure", "measured", "target", "met"), rows))


if __name__ == "__main__":
    main()
