"""LTI 1.3 (issue 30) over real HTTP: the tool served by uvicorn, launched by a fake LMS of our
own (tests/support/fake_lms.py, a real HTTP server with its own key). Each id_token check is
refused on its own with nothing created, and the very login then still launches (its nonce was
not used); a good launch opens a session whose numbers are its setup's; a relaunch resumes."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI

from app.lti.keys import ToolKey
from app.main import create_app
from app.settings import Settings
from support.serve import schema_url, serve_app
from tests.support.fake_lms import CLIENT_ID, DEPLOYMENT, STUDENT, TEACHER, FakeLms, User, fake_lms

LTI = "https://purl.imsglobal.org/spec/lti/claim/"


@pytest.fixture(scope="module")
def lms() -> Iterator[FakeLms]:
    with fake_lms() as found:
        yield found


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def tool(
    request: pytest.FixtureRequest, lms: FakeLms, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, FastAPI]]:
    """The tool trusting the fake LMS, its store on SQLite, then on PostgreSQL."""
    folder = tmp_path_factory.mktemp("lti")
    config = folder / "lti.json"
    config.write_text(json.dumps(lms.config()))
    database = ""
    if request.param == "postgres":
        database = schema_url(request.getfixturevalue("postgres_url"), f"lti_{os.getpid()}")
    app = create_app(Settings(data=str(folder), lti_config=str(config), database_url=database))
    with serve_app(app) as url:
        lms.tool = url
        yield url, app


@pytest.fixture()
def c(tool: tuple[str, FastAPI]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=tool[0], timeout=30) as client:
        yield client


def login(c: httpx.Client, lms: FakeLms) -> tuple[str, str]:
    """The OIDC login initiation as the platform starts it: (state, nonce)."""
    params = {
        "iss": lms.issuer,
        "login_hint": "u1",
        "target_link_uri": f"{lms.tool}/lti/launch",
        "lti_message_hint": "m1",
        "client_id": CLIENT_ID,
        "lti_deployment_id": DEPLOYMENT,
    }
    r = c.get("/lti/login", params=params)
    assert r.status_code == 302, r.text
    where = urllib.parse.urlsplit(r.headers["location"])
    assert f"{where.scheme}://{where.netloc}{where.path}" == f"{lms.url}/auth"
    q = dict(urllib.parse.parse_qsl(where.query))
    assert {k: q[k] for k in ("scope", "response_type", "response_mode", "prompt")} == {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
    }
    assert q["client_id"] == CLIENT_ID and q["redirect_uri"] == f"{lms.tool}/lti/launch"
    assert q["login_hint"] == "u1" and q["lti_message_hint"] == "m1"
    assert len(q["state"]) >= 32 and len(q["nonce"]) >= 32 and q["state"] != q["nonce"]
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"lti1p3-state-{q['state']}={q['state']};")
    assert "secure" in cookie.lower() and "samesite=none" in cookie.lower()
    assert "httponly" in cookie.lower()
    c.cookies.clear()
    return q["state"], q["nonce"]


def post(c: httpx.Client, token: str, state: str, bound: str | None) -> httpx.Response:
    headers = {} if bound is None else {"Cookie": f"lti1p3-state-{state}={bound}"}
    return c.post("/lti/launch", data={"id_token": token, "state": state}, headers=headers)


def session_of(r: httpx.Response) -> str:
    assert r.status_code == 303, r.text
    # the fake LMS's launches have a line item: Predict first is on
    match = re.fullmatch(r"/\?session=([A-Za-z0-9_-]+)&predict=1", r.headers["location"])
    assert match, r.headers["location"]
    return match.group(1)


def counts(app: FastAPI) -> int:
    count: int = app.state.sessions.db.count()
    return count


def check_of(r: httpx.Response) -> str:
    found = re.search(r'id="lti-check">([^<]*)<', r.text)
    assert found, r.text
    return html.unescape(found.group(1))


OTHER = rsa.generate_private_key(public_exponent=65537, key_size=2048)
NOW = int(time.time())
# (what is wrong, the claims changed or the key, the check named, the status)
REFUSED: list[tuple[str, dict[str, Any], str, int]] = [
    ("bad signature", {"key": OTHER}, "signature", 401),
    ("unknown kid", {"kid": "no-such-kid"}, "kid", 401),
    ("wrong iss", {"iss": "https://evil.example"}, "iss", 401),
    ("wrong aud", {"aud": "another-tool"}, "aud", 401),
    ("several aud, no azp", {"aud": [CLIENT_ID, "another-tool"]}, "azp", 401),
    ("several aud, wrong azp", {"aud": [CLIENT_ID, "x"], "azp": "x"}, "azp", 401),
    ("expired", {"exp": NOW - 3600, "iat": NOW - 7200}, "exp", 401),
    ("issued in the future", {"iat": NOW + 3600, "exp": NOW + 7200}, "iat", 401),
    ("unknown deployment", {"lti_deployment_id": "deployment-9"}, "deployment_id", 403),
    ("wrong version", {"lti_version": "1.1.0"}, "version", 403),
    ("wrong message_type", {"lti_message_type": "LtiSubmissionReviewRequest"}, "message_type", 403),
    (
        "deep linking without its settings",
        {"lti_message_type": "LtiDeepLinkingRequest"},
        "deep_linking_settings",
        403,
    ),
    ("no resource link", {"lti_resource_link": None}, "resource_link", 401),
]


@pytest.mark.parametrize(
    ("case", "changes", "check", "status"), REFUSED, ids=[r[0] for r in REFUSED]
)
def test_each_check_refused_alone_nothing_created(
    c: httpx.Client,
    lms: FakeLms,
    tool: tuple[str, FastAPI],
    case: str,
    changes: dict[str, Any],
    check: str,
    status: int,
) -> None:
    app = tool[1]
    state, nonce = login(c, lms)
    before = counts(app)
    r = post(c, lms.id_token(nonce, link=f"refused-{case}", **changes), state, state)
    assert r.status_code == status, r.text
    assert check_of(r) == check
    assert counts(app) == before
    assert (
        app.state.lti.db.lti_launch(lms.issuer, DEPLOYMENT, f"refused-{case}", "student-1") is None
    )
    # the same login's nonce was not used up: its good token launches
    sid = session_of(post(c, lms.id_token(nonce, link=f"refused-{case}"), state, state))
    assert counts(app) == before + 1
    assert app.state.lti.db.lti_launch_of(sid).link == f"refused-{case}"


def test_state_mismatch_refused(c: httpx.Client, lms: FakeLms, tool: tuple[str, FastAPI]) -> None:
    app = tool[1]
    state, nonce = login(c, lms)
    other, _ = login(c, lms)
    before = counts(app)
    token = lms.id_token(nonce, link="state")
    for bound in (other, None, ""):  # another login's state, no cookie, an empty one
        r = post(c, token, state, bound)
        assert r.status_code == 403 and check_of(r) == "state", r.text
    r = c.post("/lti/launch", data={"id_token": token, "state": "é", "lti_storage_state": "ü"})
    assert r.status_code == 403 and check_of(r) == "state", r.text
    r = post(c, token, other, other)  # the state of another login: its nonce is not this one
    assert r.status_code == 401 and check_of(r) == "nonce"
    assert counts(app) == before
    session_of(post(c, token, state, state))


def test_replayed_nonce_refused(c: httpx.Client, lms: FakeLms, tool: tuple[str, FastAPI]) -> None:
    app = tool[1]
    state, nonce = login(c, lms)
    token = lms.id_token(nonce, link="replay")
    session_of(post(c, token, state, state))
    before = counts(app)
    r = post(c, token, state, state)
    assert r.status_code == 401 and check_of(r) == "nonce"
    r = post(c, lms.id_token("a-nonce-never-handed-out", link="replay"), state, state)
    assert r.status_code == 401 and check_of(r) == "nonce"
    assert counts(app) == before


def test_good_launch_opens_the_setup_and_relaunch_resumes(
    c: httpx.Client, lms: FakeLms, tool: tuple[str, FastAPI]
) -> None:
    setup = {"scenario": "parabola", "lr": 0.1, "curvature": 4.0, "theta_star": 2.5}
    custom = {"setup": json.dumps(setup)}
    state, nonce = login(c, lms)
    sid = session_of(post(c, lms.id_token(nonce, link="good", custom=custom), state, state))
    s = c.get(f"/api/sessions/{sid}").json()
    plain = c.post("/api/sessions", json=setup).json()  # the same setup, made directly
    assert s["scenario"] == "parabola" and s["lr"] == 0.1
    assert s["params"] == plain["params"] and s["theory"] == plain["theory"]
    assert s["theory"]["theta_star"] == 2.5
    moved = c.post(f"/api/sessions/{sid}/forward").json()
    assert moved["moment"] == 1
    # the same student on the same link again: their session, where they left it
    state, nonce = login(c, lms)
    again = session_of(post(c, lms.id_token(nonce, link="good", custom=custom), state, state))
    assert again == sid and c.get(f"/api/sessions/{sid}").json()["moment"] == 1
    # another student on it: a session of their own; the same student on another link too
    state, nonce = login(c, lms)
    other = User("student-2", STUDENT.roles)
    theirs = session_of(
        post(
            c,
            lms.id_token(nonce, link="good", custom=custom, user=other, sub="student-2"),
            state,
            state,
        )
    )
    state, nonce = login(c, lms)
    elsewhere = session_of(post(c, lms.id_token(nonce, link="good-2", custom=custom), state, state))
    assert len({sid, theirs, elsewhere}) == 3
    assert c.get(f"/api/sessions/{theirs}").json()["moment"] == 0
    launch = tool[1].state.lti.db.lti_launch(lms.issuer, DEPLOYMENT, "good", "student-1")
    assert launch.session == sid and launch.lineitem == f"{lms.url}/lineitems/1"


def test_roles_reach_the_page(c: httpx.Client, lms: FakeLms) -> None:
    found = {}
    for user in (STUDENT, TEACHER):
        state, nonce = login(c, lms)
        sid = session_of(post(c, lms.id_token(nonce, link="roles", user=user), state, state))
        found[user.sub] = c.get("/lti/me", params={"session": sid}).json()
    assert found["student-1"]["teaching"] is False
    assert found["student-1"]["roles"] == STUDENT.roles
    assert found["teacher-1"]["teaching"] is True
    assert found["teacher-1"]["roles"] == TEACHER.roles
    plain = c.post("/api/sessions", json={}).json()["id"]
    r = c.get("/lti/me", params={"session": plain})
    assert r.status_code == 404 and r.json() == {"detail": "no LTI launch made this session"}


def test_snapshot_and_lesson_links(c: httpx.Client, lms: FakeLms) -> None:
    sid = c.post("/api/sessions", json={"lr": 0.2}).json()["id"]
    for name in ("forward", "loss", "backward"):
        c.post(f"/api/sessions/{sid}/{name}")
    token = c.post(f"/api/sessions/{sid}/snapshot").json()["snapshot"]
    state, nonce = login(c, lms)
    opened = session_of(
        post(c, lms.id_token(nonce, link="snap", custom={"snapshot": token}), state, state)
    )
    s = c.get(f"/api/sessions/{opened}").json()
    assert opened != sid and s["moment"] == 3 and s["lr"] == 0.2
    assert [p["grad"] for p in s["params"]] == [[[-23.5]], [-8.0]]  # the worked example
    # a lesson link opens a session on the lesson, its stops with it
    state, nonce = login(c, lms)
    custom = {"lesson": "five-lines"}
    on_lesson = session_of(post(c, lms.id_token(nonce, link="lesson", custom=custom), state, state))
    walked = c.post(f"/api/sessions/{on_lesson}/lesson/next-stop").json()
    assert walked["lesson"]["id"] == "five-lines" and walked["lesson"]["stop"] == 0
    for custom, check, status in (
        ({"lesson": "no-such"}, "lesson", 404),
        ({"snapshot": "no-such-token"}, "custom", 404),
        ({"setup": "{not json"}, "custom", 400),
        ({"setup": json.dumps({"scenario": "nope"})}, "custom", 400),
    ):
        state, nonce = login(c, lms)
        r = post(c, lms.id_token(nonce, link=f"bad-{check}", custom=custom), state, state)
        assert r.status_code == status and check_of(r) == check, r.text


def test_the_whole_flow_through_the_fake_lms(c: httpx.Client, lms: FakeLms) -> None:
    """The browser's hops by hand: the LMS's start, the tool's login, the LMS's authorization
    endpoint (which checks the request and posts the id_token back), the tool's launch."""
    custom = {"setup": json.dumps({"scenario": "neuron", "lr": 0.03})}
    r = httpx.get(lms.start_url(link="flow", custom=custom))
    assert r.status_code == 302 and r.headers["location"].startswith(f"{lms.tool}/lti/login?")
    r = httpx.get(r.headers["location"])
    state = r.headers["set-cookie"].split(";")[0].split("=", 1)[1]
    r = httpx.get(r.headers["location"])
    assert r.status_code == 200, r.text
    fields = dict(re.findall(r"name='(id_token|state)' value='([^']*)'", r.text))
    assert fields["state"] == state
    sid = session_of(post(c, html.unescape(fields["id_token"]), state, state))
    assert c.get(f"/api/sessions/{sid}").json()["lr"] == 0.03


def test_key_rotation_refetches_the_platform_keys(c: httpx.Client, lms: FakeLms) -> None:
    state, nonce = login(c, lms)
    session_of(post(c, lms.id_token(nonce, link="rotate"), state, state))  # the old kid, cached
    lms.rotate()
    time.sleep(1.1)  # an unknown kid refetches at most once a second
    state, nonce = login(c, lms)
    session_of(post(c, lms.id_token(nonce, link="rotate"), state, state))


def test_jwks_and_platform_storage_login(c: httpx.Client, lms: FakeLms) -> None:
    keys = c.get("/lti/jwks").json()["keys"]
    assert len(keys) == 1 and keys[0]["kty"] == "RSA" and keys[0]["alg"] == "RS256"
    public = jwt.PyJWK(keys[0])
    assert public.key_id == keys[0]["kid"] and len(keys[0]["kid"]) == 43  # a SHA-256 thumbprint
    r = c.get(
        "/lti/login", params={"iss": lms.issuer, "login_hint": "u", "lti_storage_target": "_parent"}
    )
    assert r.status_code == 200 and "static/js/lti-storage.js" in r.text
    assert 'data-action="put"' in r.text and 'data-target="_parent"' in r.text
    assert f'data-origin="{lms.url}"' in r.text
    state = re.search(r'data-state="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    nonce = re.search(r'data-nonce="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    # the launch without the cookie: a page that asks the platform's storage, then posts again
    token = lms.id_token(nonce, link="storage")
    c.cookies.clear()
    r = post(c, token, state, None)
    assert r.status_code == 200 and 'data-action="get"' in r.text and "lti-repost" in r.text
    # the state read back from the platform's storage, posted with the form
    r = c.post("/lti/launch", data={"id_token": token, "state": state, "lti_storage_state": ""})
    assert r.status_code == 403 and check_of(r) == "state"
    r = c.post("/lti/launch", data={"id_token": token, "state": state, "lti_storage_state": state})
    session_of(r)
    for bad in ({}, {"iss": "https://evil.example", "login_hint": "u"}):
        r = c.get("/lti/login", params=bad)
        assert r.status_code in (400, 401) and check_of(r) in ("login", "iss")


def test_lti_off_answers_404(client: httpx.Client) -> None:
    for method, path in (
        ("GET", "/lti/jwks"),
        ("GET", "/lti/login"),
        ("POST", "/lti/login"),
        ("POST", "/lti/launch"),
        ("GET", "/lti/me?session=x"),
    ):
        r = client.request(method, path)
        assert r.status_code == 404 and r.json() == {
            "detail": "LTI is not configured on this server"
        }


def test_a_bad_config_stops_the_start(tmp_path: Path) -> None:
    config = tmp_path / "lti.json"
    config.write_text(json.dumps({"https://lms": [{"client_id": "x", "deployment_ids": []}]}))
    from app.lti import ConfigError

    with pytest.raises(ConfigError, match="deployment_ids"):
        create_app(Settings(data=str(tmp_path), lti_config=str(config)))


def test_the_key_file_setting(tmp_path: Path) -> None:
    key = ToolKey.made()
    (tmp_path / "key.pem").write_text(key.pem())
    config = tmp_path / "lti.json"
    config.write_text(
        json.dumps(
            {
                "https://lms": [
                    {
                        "client_id": "x",
                        "deployment_ids": ["1"],
                        "auth_login_url": "https://lms/a",
                        "auth_token_url": "https://lms/t",
                        "key_set_url": "https://lms/k",
                    }
                ]
            }
        )
    )
    app = create_app(
        Settings(data=tempfile.mkdtemp(), lti_config=str(config), lti_key=str(tmp_path / "key.pem"))
    )
    try:
        assert app.state.lti.jwks() == {"keys": [key.jwk()]}
    finally:
        app.state.sessions.close()


def test_post_login_and_the_launch_body_limit(c: httpx.Client, lms: FakeLms) -> None:
    r = c.post("/lti/login", data={"iss": lms.issuer, "login_hint": "u2"})
    assert r.status_code == 302
    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(r.headers["location"]).query))
    assert q["login_hint"] == "u2" and q["client_id"] == CLIENT_ID and "lti_message_hint" not in q
    state = q["state"]
    # over the usual 16 KB body but under the launch's 64 KB: read, and refused as a token
    r = post(c, "x" * 40_000, state, state)
    assert r.status_code == 401 and check_of(r) == "id_token"
    r = post(c, "x" * 70_000, state, state)
    assert r.status_code == 413
    assert r.json() == {"detail": "an LTI launch is at most 65536 bytes"}


def test_malformed_input_is_a_4xx_never_a_500(c: httpx.Client, lms: FakeLms) -> None:
    state, nonce = login(c, lms)
    fields = "&".join(f"f{i}=1" for i in range(40))
    r = c.post(
        "/lti/launch", content=fields, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 400 and r.json() == {"detail": "a form of at most 16 fields"}
    deep = "[" * 20_000 + "]" * 20_000
    for token in (
        "not.a.jwt",
        "x",
        jwt.utils.base64url_encode(b'{"alg":"RS256"}').decode()
        + "."
        + jwt.utils.base64url_encode(deep.encode()).decode()
        + ".c2ln",
    ):
        r = post(c, token, state, state)
        assert r.status_code == 401 and check_of(r) == "id_token", r.text
    deep_setup = {"setup": "[" * 5_000 + "]" * 5_000}
    r = post(c, lms.id_token(nonce, link="deep", custom=deep_setup), state, state)
    assert r.status_code == 400 and check_of(r) == "custom"


def test_the_fake_lms_checks_the_tools_assertion_and_records_scores(
    lms: FakeLms, tool: tuple[str, FastAPI]
) -> None:
    """The fake LMS's endpoints for the second round (AGS, deep linking, registration) do
    what a platform does: a bearer token only for an assertion the tool's JWKS verifies."""
    key: ToolKey = tool[1].state.lti.key
    now = int(time.time())
    claims = {
        "iss": CLIENT_ID,
        "sub": CLIENT_ID,
        "aud": f"{lms.url}/token",
        "iat": now,
        "exp": now + 60,
        "jti": "j1",
    }

    def grant(assertion: str) -> httpx.Response:
        return httpx.post(
            f"{lms.url}/token",
            data={
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion,
                "scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score",
            },
        )

    signed = jwt.encode(claims, key.private, algorithm="RS256", headers={"kid": key.kid})
    forged = jwt.encode(claims, OTHER, algorithm="RS256", headers={"kid": key.kid})
    assert grant(forged).status_code == 401
    answer = grant(signed)
    assert answer.status_code == 200 and answer.json()["token_type"] == "Bearer"
    bearer = answer.json()["access_token"]
    score = {
        "userId": "student-1",
        "scoreGiven": 1,
        "scoreMaximum": 2,
        "activityProgress": "InProgress",
        "gradingProgress": "FullyGraded",
        "timestamp": "2026-12-03T07:00:00Z",
    }
    kind = {"Content-Type": "application/vnd.ims.lis.v1.score+json"}
    url = f"{lms.url}/lineitems/1/scores"
    before = len(lms.scores)
    assert httpx.post(url, json=score, headers=kind).status_code == 401
    lms.down = True
    try:
        down = httpx.post(
            url, content=json.dumps(score), headers={**kind, "Authorization": f"Bearer {bearer}"}
        )
        assert down.status_code == 503
    finally:
        lms.down = False
    r = httpx.post(
        url, content=json.dumps(score), headers={**kind, "Authorization": f"Bearer {bearer}"}
    )
    assert r.status_code == 200
    assert lms.scores[before:] == [{"lineitem": f"{lms.url}/lineitems/1", **score}]
    config = httpx.get(f"{lms.url}/registration/openid-configuration").json()
    assert config["issuer"] == lms.issuer
    assert config["registration_endpoint"] == f"{lms.url}/registration"
    registered = httpx.post(config["registration_endpoint"], json={"client_name": "Loop Stepper"})
    assert registered.json()["client_name"] == "Loop Stepper"
    assert registered.json()["client_id"].startswith("reg-")
    # the deep-linking return checks the tool's signature: a forged answer is refused
    assert httpx.post(f"{lms.url}/deep_link_return", data={"JWT": "a.b.c"}).status_code == 400
    assert all(d["JWT"] != "a.b.c" for d in lms.deep_links)


def test_loop_stepper_says_what_is_wrong_with_the_lti_settings(tmp_path: Path) -> None:
    config = tmp_path / "lti.json"
    config.write_text("{not json")
    (tmp_path / "bad.pem").write_text("not a key")
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {
                "https://lms": [
                    {
                        "client_id": "x",
                        "deployment_ids": ["1"],
                        "auth_login_url": "https://lms/a",
                        "auth_token_url": "https://lms/t",
                        "key_set_url": "https://lms/k",
                    }
                ]
            }
        )
    )
    root = Path(__file__).resolve().parents[2]
    for env, said in (
        ({"LOOP_STEPPER_LTI_CONFIG": str(config)}, f"{config} is not JSON"),
        (
            {
                "LOOP_STEPPER_LTI_CONFIG": str(good),
                "LOOP_STEPPER_LTI_KEY": str(tmp_path / "bad.pem"),
            },
            "LOOP_STEPPER_LTI_KEY",
        ),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", "--port", "0"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(root), "LOOP_STEPPER_DATA": str(tmp_path), **env},
        )
        assert done.returncode == 1 and done.stderr.startswith("loop-stepper: "), done.stderr
        assert said in done.stderr and "Traceback" not in done.stderr
