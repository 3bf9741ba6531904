"""The Dockerfile builds, the container answers /healthz on port 8000, and runs as non-root.

Uses ``shared/tools/container-smoke`` (podman; no Docker engine here) from beside the repo. The
first run on a machine builds stand-in base images (about 2 minutes) and the image (about 2
more); later runs reuse podman's layer cache.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT.parent / "shared" / "tools" / "container-smoke"
WORK = Path(os.environ.get("SMOKE_WORK", "/tmp/container-smoke"))

pytestmark = pytest.mark.container


def podman(*args: str) -> str:
    env = {
        **os.environ,
        "CONTAINERS_STORAGE_CONF": str(WORK / "storage.conf"),
        "CONTAINERS_CONF": str(WORK / "containers.conf"),
    }
    done = subprocess.run(
        ["podman", *args], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_the_image_builds_answers_and_runs_as_non_root() -> None:
    assert SMOKE.exists(), f"container-smoke not found at {SMOKE}"
    assert port_free(8000), "port 8000 is taken on this machine: the smoke test needs it"
    env = {
        **os.environ,
        "SMOKE_WORK": str(WORK),
        "KEEP": "1",  # leave it running: we look inside, then remove it
        # keep HEALTHCHECK (OCI images drop it); the wheel folder here holds the CPU torch
        "BUILD_OPTS": "--format docker --build-arg TORCH_INDEX_URL=",
    }
    done = subprocess.run(
        ["bash", str(SMOKE), str(ROOT), "8000", "/healthz"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    name = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    try:
        assert done.returncode == 0, done.stderr[-3000:]
        assert "OK after" in done.stderr
        assert shutil.which("podman")
        uid = podman("exec", name, "id", "-u")
        assert uid != "0" and uid.isdigit(), uid
        config = json.loads(podman("inspect", name, "--format", "{{json .Config}}"))
        assert config["User"] not in ("", "0", "root")
        assert "LOOP_STEPPER_HOST=0.0.0.0" in config["Env"]
        health = json.loads(
            podman("image", "inspect", config["Image"], "--format", "{{json .Config.Healthcheck}}")
        )
        assert any("/healthz" in part for part in health["Test"]), health
    finally:
        if name:
            subprocess.run(
                ["podman", "rm", "-f", "-t", "3", name],
                capture_output=True,
                env={
                    **os.environ,
                    "CONTAINERS_STORAGE_CONF": str(WORK / "storage.conf"),
                    "CONTAINERS_CONF": str(WORK / "containers.conf"),
                },
                check=False,
                timeout=60,
            )
