"""A school's deployment: TLS at a reverse proxy, the app under a path prefix.

Debian's real nginx (and Caddy, when installed) runs docs/deploy.md's snippets as written
(``deploy/``; only the app's port is replaced) with a self-signed certificate made by openssl at
test time, in front of the app started the way docs/deploy.md says
(``loop-stepper --root-path /loop-stepper --forwarded-allow-ips 127.0.0.1``). Chromium opens
``https://127.0.0.1:<port>/loop-stepper/``, runs a whole iteration and reads the worked
example's numbers; no request leaves the prefix and nothing is blocked as mixed content.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from support.process import server_process, stop
from support.serve import free_port

from .conftest import Watch, shot
from .test_page import value

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PREFIX = "/loop-stepper"
NGINX = "/usr/sbin/nginx"
CADDY = shutil.which("caddy")


def wait_until_up(url: str, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url, timeout=1, verify=False)
            return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.1)


@contextmanager
def running(
    args: list[str], url: str, what: str, log: Path, env: dict[str, str] | None = None
) -> Iterator[None]:
    """Run `args` until the block ends; `url` answering means it is up; its output in `log`."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            try:
                wait_until_up(url, proc, what)
            except RuntimeError as error:
                raise RuntimeError(f"{error}: {log.read_text()[-2000:]}") from None
            yield
        finally:
            stop(proc)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made now (no key ever checked in)."""
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app as docs/deploy.md starts it behind a proxy: its prefix and the trusted proxy."""
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "app.cli",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--root-path",
        PREFIX,
        "--forwarded-allow-ips",
        "127.0.0.1",
    ]
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("app") / "app.log"
    with running(args, f"{url}/healthz", "the app", log):
        yield url


def snippet(name: str, app_url: str) -> str:
    """A deploy/ snippet as docs/deploy.md shows it, pointed at the test's app port."""
    text = (DEPLOY / name).read_text()
    assert "127.0.0.1:8000" in text
    return text.replace("127.0.0.1:8000", app_url.removeprefix("http://"))


@pytest.fixture(scope="module")
def nginx(
    tmp_path_factory: pytest.TempPathFactory, certificate: tuple[Path, Path], app_url: str
) -> Iterator[str]:
    """Debian's nginx with docs/deploy.md's location block, TLS on a free port; yields the URL."""
    where = tmp_path_factory.mktemp("nginx")
    where.chmod(0o755)  # run as root, nginx's workers are "nobody": they write the temp files
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (where / sub).mkdir(mode=0o777)
        (where / sub).chmod(0o777)
    (where / "loop-stepper.conf").write_text(snippet("nginx-subpath.conf", app_url))
    port = free_port()
    cert, key = certificate
    (where / "nginx.conf").write_text(f"""
daemon off;
worker_processes 1;
pid {where}/nginx.pid;
error_log {where}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {where}/body;
    # pytest's temp root is 0700, out of the workers' reach: a CSV dataset's body (1 MB) stays
    # in memory instead of a temp file (a real install's temp path is nginx's own)
    client_body_buffer_size 1m;
    proxy_temp_path {where}/proxy;
    fastcgi_temp_path {where}/fastcgi;
    uwsgi_temp_path {where}/uwsgi;
    scgi_temp_path {where}/scgi;
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        include {where}/loop-stepper.conf;
    }}
}}
""")
    args = [
        NGINX,
        "-p",
        str(where),
        "-e",
        str(where / "error.log"),
        "-c",
        str(where / "nginx.conf"),
    ]
    url = f"https://127.0.0.1:{port}"
    with running(args, url, "nginx", where / "stderr.log"):
        yield url + PREFIX


@pytest.fixture(scope="module")
def caddy(
    tmp_path_factory: pytest.TempPathFactory, certificate: tuple[Path, Path], app_url: str
) -> Iterator[str]:
    """Caddy with docs/deploy.md's directives inside a TLS site block; yields the app's URL."""
    if CADDY is None:
        pytest.skip("caddy is not installed (Debian: apt-get install caddy)")
    where = tmp_path_factory.mktemp("caddy")
    (where / "loop-stepper.caddy").write_text(snippet("caddy-subpath.caddy", app_url))
    port, http_port = free_port(), free_port()
    cert, key = certificate
    (where / "Caddyfile").write_text(f"""{{
    admin off
    http_port {http_port}
    storage file_system {where}/data
}}
https://127.0.0.1:{port} {{
    tls {cert} {key}
    import {where}/loop-stepper.caddy
}}
""")
    env = {
        "HOME": str(where),
        "XDG_DATA_HOME": str(where / "data"),
        "XDG_CONFIG_HOME": str(where / "config"),
    }
    args = [CADDY, "run", "--config", str(where / "Caddyfile"), "--adapter", "caddyfile"]
    url = f"https://127.0.0.1:{port}"
    with running(args, url, "caddy", where / "caddy.log", env):
        yield url + PREFIX


@pytest.fixture()
def tls_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 1360, "height": 900})
    yield context.new_page()
    context.close()


def whole_iteration(page: Page, base: str) -> None:
    """Open the page under the prefix, click Next line five times, read the worked example."""
    page.goto(base + "/")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator("#next")).to_be_enabled()
    for n in range(1, 6):
        page.get_by_role("button", name="Next line").click()
        expect(page.locator("body")).to_have_attribute("data-renders", str(n + 1))
        if n == 4:  # backward
            assert value(page, "Gradients", "weight") == "-23.5"
            assert value(page, "Gradients", "bias") == "-8"
    assert value(page, "Parameters", "weight") == "1.175"
    assert value(page, "Parameters", "bias") == "0.4"
    expect(page.locator("#output .fit")).to_have_count(1)  # GET .../output under the prefix too
    # the links the page writes stay under the prefix as well
    href = page.locator("#compare-link").evaluate("a => a.href")
    assert href.startswith(base + "/?compare="), href


def docs_work(page: Page, base: str) -> None:
    """Swagger UI under the prefix: its files and its openapi.json come from there."""
    with page.expect_response(lambda r: r.url.endswith("/openapi.json")) as schema:
        page.goto(base + "/docs")
    assert schema.value.url == base + "/openapi.json"
    assert schema.value.status == 200
    expect(page.locator(".opblock").first).to_be_visible()
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert {"/api/scenarios", "/api/sessions"} <= {p.replace("\u200b", "") for p in paths}
    assert len(paths) >= 15
    # "Try it out" sends requests to the server FastAPI names from the root path
    expect(page.locator(".servers select")).to_contain_text(PREFIX)


def test_nginx_tls_subpath(tls_page: Page, nginx: str) -> None:
    page = tls_page
    watch = Watch().attach(page)
    whole_iteration(page, nginx)
    shot(page, "20-behind-nginx-tls-subpath")
    docs_work(page, nginx)
    assert not [u for u in watch.urls if u.startswith("http:")]  # nothing mixed in
    watch.check(nginx)  # not one request outside https://127.0.0.1:<port>/loop-stepper/


def test_nginx_redirects_and_forwarded_headers(nginx: str) -> None:
    with httpx.Client(verify=False, timeout=10) as client:
        # the prefix without its slash: nginx sends the browser to the page
        bare = client.get(nginx)
        assert bare.status_code == 301
        assert bare.headers["location"] == nginx + "/"
        # the app's own redirects name the scheme and host the browser used (X-Forwarded-Proto
        # and Host trusted from the proxy) and keep the prefix (root_path)
        slash = client.get(nginx + "/api/scenarios/")
        assert slash.status_code == 307
        assert slash.headers["location"] == nginx + "/api/scenarios"
        # /docs keeps its own policy under the prefix (Swagger UI's inline styles)
        docs = client.get(nginx + "/docs")
        assert "style-src 'self' 'unsafe-inline'" in docs.headers["content-security-policy"]
        assert "unsafe-inline" not in client.get(nginx + "/").headers["content-security-policy"]
        schema = client.get(nginx + "/openapi.json").json()
        assert schema["servers"] == [{"url": PREFIX}]
        names = [s["name"] for s in client.get(nginx + "/api/scenarios").json()]
        assert names[0] == "neuron"
        # a CSV dataset of 1 MB passes nginx's client_max_body_size to the app (issue 28)
        body = b"n\n" + b"".join(b"%09d\n" % n for n in range(10_000))
        body += b"x" * (1024**2 - len(body))  # a 10,001st row: the app read it all, refused it
        csv = {"content-type": "text/csv"}
        kept = client.post(nginx + "/api/datasets", content=body[:100_002], headers=csv)
        assert kept.status_code == 201 and kept.json()["rows"] == 10_000
        whole = client.post(nginx + "/api/datasets", content=body, headers=csv)
        assert whole.status_code == 422  # 1 MB reached the app


def test_caddy_tls_subpath(tls_page: Page, caddy: str) -> None:
    page = tls_page
    watch = Watch().attach(page)
    whole_iteration(page, caddy)
    docs_work(page, caddy)
    watch.check(caddy)
    with httpx.Client(verify=False, timeout=10) as client:
        bare = client.get(caddy)
        assert bare.status_code == 308
        assert bare.headers["location"] == PREFIX + "/"
        slash = client.get(caddy + "/api/scenarios/")
        assert slash.headers["location"] == caddy + "/api/scenarios"


def test_forwarded_headers_are_ignored_by_default() -> None:
    """Without LOOP_STEPPER_FORWARDED_ALLOW_IPS no one is trusted, not even 127.0.0.1."""
    spoof = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "10.9.8.7"}
    with server_process({}) as (url, _):
        r = httpx.get(url + "/api/scenarios/", headers=spoof, timeout=10)
        assert r.status_code == 307
        assert r.headers["location"] == url + "/api/scenarios"  # http, as it came
    with server_process({"LOOP_STEPPER_FORWARDED_ALLOW_IPS": "127.0.0.1"}) as (url, _):
        r = httpx.get(url + "/api/scenarios/", headers=spoof, timeout=10)
        assert r.headers["location"] == "https" + url.removeprefix("http") + "/api/scenarios"


@pytest.mark.parametrize("name", ["nginx-subpath.conf", "caddy-subpath.caddy"])
def test_docs_show_the_tested_snippets(name: str) -> None:
    """docs/deploy.md's snippets are the files these tests run, word for word."""
    assert (DEPLOY / name).read_text().rstrip() in (ROOT / "docs" / "deploy.md").read_text()


def test_cli_refuses_a_root_path_that_is_not_a_path() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "app.cli", "--root-path", "loop-stepper"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "root_path is a URL path such as /loop-stepper" in r.stderr
