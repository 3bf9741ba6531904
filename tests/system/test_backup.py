"""``loop-stepper backup`` while 20 students click, against a real server process: the copy
passes ``check``, a restore is refused while the server runs, and the copy restored into a new
data directory and served answers every session as acknowledged before the backup started.

Bounded: at most 300 requests a student, stopped once the backup is done; loopback only.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from support.process import ROOT, server_process

STUDENTS = 20
SKIP = {"id", "moments"}


def same_moment(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k not in SKIP} == {
        k: v for k, v in b.items() if k not in SKIP
    }


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "app.cli", *args]


def env(data: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "LOOP_STEPPER_DATA": str(data)}


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args), cwd=ROOT, env=env(data), capture_output=True, text=True, timeout=120
    )


async def student(
    client: httpx.AsyncClient,
    sid: str,
    rng: random.Random,
    answers: list[dict[str, Any]],
    done: asyncio.Event,
) -> None:
    # only forward (no rewinds): every earlier moment stays in the log to be rewound to
    for _ in range(300):
        if done.is_set():
            return
        if rng.random() < 0.8:
            r = await client.post(f"/api/sessions/{sid}/next")
        else:
            r = await client.post(f"/api/sessions/{sid}/run", json={"iterations": 1})
        assert r.status_code in (200, 429), r.text
        if r.status_code == 200:
            answers.append(r.json())
        await asyncio.sleep(rng.uniform(0.0, 0.05))


def test_a_backup_while_a_class_clicks_restores_every_acknowledged_answer(
    tmp_path: Path,
) -> None:
    first, second, copy = tmp_path / "first", tmp_path / "second", tmp_path / "backup.sqlite3"
    answers: dict[str, list[dict[str, Any]]] = {}
    with server_process({"LOOP_STEPPER_DATA": str(first)}) as (url, _):
        with httpx.Client(base_url=url, timeout=30) as c:
            for i in range(STUDENTS):
                s = c.post("/api/sessions", json={"scenario": ["neuron", "moons"][i % 2]}).json()
                answers[s["id"]] = [s]

        async def class_and_backup() -> tuple[dict[str, int], dict[str, int]]:
            done = asyncio.Event()
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                tasks = [
                    asyncio.create_task(student(client, sid, random.Random(i), answers[sid], done))
                    for i, sid in enumerate(answers)
                ]
                for _ in range(200):  # the class under way before the backup starts
                    if sum(len(a) for a in answers.values()) > 3 * STUDENTS:
                        break
                    await asyncio.sleep(0.05)
                started = {sid: len(a) for sid, a in answers.items()}
                backup = await asyncio.create_subprocess_exec(
                    *command("backup", str(copy)),
                    cwd=ROOT,
                    env=env(first),
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                out, err = await asyncio.wait_for(backup.communicate(), 120)
                ended = {sid: len(a) for sid, a in answers.items()}
                done.set()
                await asyncio.wait_for(asyncio.gather(*tasks), 60)
            assert backup.returncode == 0, err.decode()
            assert "integrity_check: ok" in out.decode()
            return started, ended

        started, ended = asyncio.run(class_and_backup())
        during = sum(ended[sid] - started[sid] for sid in answers)
        assert during > 0  # the server did write while the copy was made
        refused = cli(first, "restore", str(copy))
        assert refused.returncode == 1
        assert "in use by a running server" in refused.stderr
    checked = cli(first, "check", str(copy))
    assert checked.returncode == 0, checked.stdout
    assert f"{STUDENTS} sessions" in checked.stdout and "NOT OK" not in checked.stdout
    restored = cli(second, "restore", str(copy))
    assert restored.returncode == 0, restored.stderr
    with (
        server_process({"LOOP_STEPPER_DATA": str(second)}) as (url, _),
        httpx.Client(base_url=url, timeout=30) as c,
    ):
        for sid, history in answers.items():
            acked = history[started[sid] - 1]  # the newest answer before the backup began
            now = c.get(f"/api/sessions/{sid}").json()
            # the copy is one moment: this session as it was acknowledged at or after
            # ``acked`` (every write the server took was answered: the class ended cleanly)
            assert now in history[started[sid] - 1 :], sid
            back = c.post(f"/api/sessions/{sid}/rewind", json={"to": acked["moment"]})
            assert back.status_code == 200 and same_moment(back.json(), acked), sid
