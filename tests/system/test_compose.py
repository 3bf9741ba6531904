"""``deploy/compose.yaml`` read as compose reads it, checked against the Dockerfile and
``deploy/nginx.conf``: no registry here to pull nginx's and PostgreSQL's images from, and no
compose tool, so the file's structure is what is tested (the processes it starts are tested
for real by tests/system/test_shards.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # << merges
    return data


def test_every_service_is_healthchecked_and_starts_in_order() -> None:
    services = compose()["services"]
    apps = {name: s for name, s in services.items() if "build" in s}
    assert set(services) == {"postgres", "nginx", *apps} and len(apps) >= 2
    for service in services.values():
        check = service["healthcheck"]["test"]
        assert check[0] in ("CMD", "CMD-SHELL") and len(check) >= 2
        assert service["restart"] == "unless-stopped"
    assert services["postgres"]["healthcheck"]["test"][1].startswith("pg_isready")
    for app in apps.values():
        assert app["depends_on"] == {"postgres": {"condition": "service_healthy"}}
        assert "/healthz" in " ".join(app["healthcheck"]["test"])
    assert services["nginx"]["depends_on"] == {
        name: {"condition": "service_healthy"} for name in apps
    }
    assert "/healthz" in " ".join(services["nginx"]["healthcheck"]["test"])


def test_apps_are_built_from_the_dockerfile_and_share_postgres() -> None:
    data = compose()
    services = data["services"]
    pg = services["postgres"]
    env = pg["environment"]
    volume, target = pg["volumes"][0].split(":")[:2]
    assert target == "/var/lib/postgresql/data" and volume in data["volumes"]
    apps = {name: s for name, s in services.items() if "build" in s}
    names = set()
    for app in apps.values():
        context = (DEPLOY / app["build"]["context"]).resolve()
        assert context == ROOT and (context / app["build"]["dockerfile"]).is_file()
        url = app["environment"]["LOOP_STEPPER_DATABASE_URL"]
        match = re.fullmatch(r"postgresql://(\w+):(\S+)@postgres:5432/(\w+)", url)
        assert match is not None, url
        assert match[1] == env["POSTGRES_USER"] and match[3] == env["POSTGRES_DB"]
        assert match[2] == env["POSTGRES_PASSWORD"]  # the same ${POSTGRES_PASSWORD:-...}
        assert "ports" not in app  # reached through nginx only
        names.add(app["environment"]["LOOP_STEPPER_SERVED_BY"])
    assert names == set(apps)  # each says which one it is


def test_nginx_routes_to_exactly_the_app_services() -> None:
    services = compose()["services"]
    apps = {name for name, s in services.items() if "build" in s}
    nginx = services["nginx"]
    source, target = nginx["volumes"][0].split(":")[:2]
    assert (DEPLOY / source).resolve() == DEPLOY / "nginx.conf"
    assert target == "/etc/nginx/conf.d/default.conf"  # an http-level file, as written
    conf = (DEPLOY / "nginx.conf").read_text()
    upstreams = re.findall(r"^\s*server (\w+):(\d+)", conf, re.MULTILINE)
    assert {name for name, _ in upstreams} == apps and {p for _, p in upstreams} == {"8000"}
    assert nginx["ports"] == ["8080:80"] and "listen 80;" in conf
    # the port the apps listen on in the image
    assert "LOOP_STEPPER_PORT=8000" in (ROOT / "Dockerfile").read_text()
