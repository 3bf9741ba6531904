"""The Dockerfile builds; the container answers /healthz, runs as non-root, keeps its HEALTHCHECK
and holds the versions in requirements.lock.

Which engine: Docker when one is usable (`docker info` succeeds); otherwise podman through
``../shared/tools/container-smoke`` when that script is beside the repo (the first run on a machine
builds stand-in base images, about 2 minutes, and the image, about 2 more; later runs reuse the
layer cache); otherwise the test is skipped, saying why. LOOP_STEPPER_REQUIRE_CONTAINER=1 (set
by .ci/run) turns that skip into a failure, so CI always proves the image. DOCKER_BUILD_OPTS adds
flags to `docker build`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
import tomllib
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT.parent / "shared" / "tools" / "container-smoke"
WORK = Path(os.environ.get("SMOKE_WORK", "/tmp/container-smoke"))
DOCKER_TAG = "loop-stepper-test:latest"

pytestmark = pytest.mark.container


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("LOOP_STEPPER_REQUIRE_CONTAINER") == "1":
        pytest.fail(f"{reason}; LOOP_STEPPER_REQUIRE_CONTAINER=1 wants the image tested", False)
    pytest.skip(reason)


def docker_usable() -> bool:
    if shutil.which("docker") is None:
        return False
    try:  # the CLI alone is not enough: it needs an engine that answers
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


@dataclass
class Engine:
    """`docker` or `podman`, with the environment it needs (podman: container-smoke's storage)."""

    command: str
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    def run(self, *args: str, timeout: float = 60, check: bool = True) -> str:
        done = subprocess.run(
            [self.command, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check:
            assert done.returncode == 0, f"{self.command} {args[0]}: {done.stderr[-3000:]}"
        return done.stdout.strip()


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def post_json(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def wait_for_json(url: str, running: Callable[[], bool], seconds: float = 120) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        try:
            return get_json(url)
        except OSError:
            if time.monotonic() > deadline or not running():
                raise
            time.sleep(0.5)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions() -> dict[str, str]:
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    pins = (line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))
    return {canonical(name): version.strip() for name, version in pins}


def runtime_dependencies() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [
        canonical(re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0]) for dep in project["dependencies"]
    ]


@contextmanager
def with_docker() -> Iterator[tuple[Engine, str, str]]:
    """Build with docker, run on a loopback port it picks; yield (engine, container, base URL)."""
    docker = Engine("docker")
    # e.g. DOCKER_BUILD_OPTS="--build-arg TORCH_INDEX_URL=" where pip is set up with a local mirror
    extra = shlex.split(os.environ.get("DOCKER_BUILD_OPTS", ""))
    docker.run("build", *extra, "-t", DOCKER_TAG, str(ROOT), timeout=1800)
    container = docker.run("run", "-d", "-p", "127.0.0.1::8000", DOCKER_TAG)
    try:
        # e.g. "127.0.0.1:49153"
        host_port = docker.run("port", container, "8000/tcp").splitlines()[0].rsplit(":", 1)[1]
        yield docker, container, f"http://127.0.0.1:{host_port}"
    finally:
        docker.run("rm", "-f", container, check=False)


@contextmanager
def with_podman() -> Iterator[tuple[Engine, str, str]]:
    """Build and start with container-smoke on port 8000; yield (engine, container, base URL)."""
    if not port_free(8000):
        unavailable("port 8000 is taken on this machine: container-smoke needs it")
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
        check=False,
    )
    container = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    podman = Engine(
        "podman",
        {
            **os.environ,
            "CONTAINERS_STORAGE_CONF": str(WORK / "storage.conf"),
            "CONTAINERS_CONF": str(WORK / "containers.conf"),
        },
    )
    try:
        assert done.returncode == 0, done.stderr[-3000:]
        assert "OK after" in done.stderr
        yield podman, container, "http://127.0.0.1:8000"
    finally:
        if container:
            podman.run("rm", "-f", "-t", "3", container, check=False)


def test_the_image_builds_answers_runs_as_non_root_with_the_locked_versions() -> None:
    if docker_usable():
        started = with_docker()
    elif SMOKE.exists():
        started = with_podman()
    else:
        unavailable(f"no Docker engine answers `docker info`, and no {SMOKE} for podman")
    with started as (engine, container, url):

        def running() -> bool:
            state = engine.run("inspect", "-f", "{{.State.Running}}", container, check=False)
            return state == "true"

        try:
            assert wait_for_json(f"{url}/healthz", running) == {"status": "ok"}
        except OSError:
            logs = engine.run("logs", container, check=False)
            pytest.fail(f"no answer on {url}/healthz; container logs:\n{logs[-3000:]}")
        scenarios = get_json(f"{url}/api/scenarios")
        assert "neuron" in json.dumps(scenarios), scenarios

        uid = engine.run("exec", container, "id", "-u")
        assert uid.isdigit() and uid != "0", uid
        config = json.loads(engine.run("inspect", container, "--format", "{{json .Config}}"))
        assert config["User"] not in ("", "0", "root")
        assert "LOOP_STEPPER_HOST=0.0.0.0" in config["Env"]
        # The container's config carries the image's HEALTHCHECK (Docker-compatible APIs such as
        # podman's leave it out of `image inspect`). Run its command inside: it must pass.
        health = config["Healthcheck"]
        assert any("/healthz" in part for part in health["Test"]), health
        kind, *probe = health["Test"]
        assert kind in ("CMD", "CMD-SHELL"), health
        engine.run("exec", container, *(["sh", "-c", *probe] if kind == "CMD-SHELL" else probe))

        # Same versions as the lock; torch is the CPU build (its "+cpu" local label aside).
        listed = json.loads(
            engine.run("exec", container, "python", "-m", "pip", "list", "--format=json")
        )
        installed = {canonical(p["name"]): p["version"].split("+")[0] for p in listed}
        locked = locked_versions()
        differ = {n: (v, locked[n]) for n, v in installed.items() if n in locked and v != locked[n]}
        assert differ == {}, f"image version, lock version: {differ}"
        missing = [name for name in runtime_dependencies() if name not in installed]
        assert missing == [], missing
        cuda = engine.run(
            "exec", container, "python", "-c", "import torch; print(torch.version.cuda)"
        )
        assert cuda == "None", cuda

        # Sessions live in the /data volume: a restarted container answers as before, and its
        # graph (forward, loss before the restart) backpropagates to the worked example.
        assert "LOOP_STEPPER_DATA=/data" in config["Env"]
        sid = post_json(f"{url}/api/sessions", {})["id"]
        post_json(f"{url}/api/sessions/{sid}/forward", {})
        before = post_json(f"{url}/api/sessions/{sid}/loss", {})
        engine.run("restart", "-t", "5", container)
        assert wait_for_json(f"{url}/api/sessions/{sid}", running) == before
        after = post_json(f"{url}/api/sessions/{sid}/backward", {})
        assert [p["grad"] for p in after["params"]] == [[[-23.5]], [-8.0]]
