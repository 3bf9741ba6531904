"""LTI 1.3's second round (issue 30) over real HTTP against the fake LMS: deep linking answers
a signed LtiDeepLinkingResponse the platform accepts; a launched student's predictions reach
the launch's line item as AGS scores (through one cached token), and wait in the database
while the platform is down without slowing a click; dynamic registration registers the tool
and its platform then launches like a configured one. On SQLite, then PostgreSQL."""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
from fastapi import FastAPI

from app.lti import Lti
from app.lti.grades import QUESTIONS, SCORE_SCOPE, score_body
from app.main import create_app
from app.settings import Settings
from app.web.security import SecurityMiddleware
from support.serve import schema_url, serve_app
from tests.support.fake_lms import CLIENT_ID, DEPLOYMENT, DL, TEACHER, FakeLms, fake_lms

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
KEY = "registration-secret-1"


@pytest.fixture(scope="module")
def lms() -> Iterator[FakeLms]:
    with fake_lms() as found:
        yield found


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def tool(
    request: pytest.FixtureRequest, lms: FakeLms, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, FastAPI]]:
    folder = tmp_path_factory.mktemp("lti2")
    config = folder / "lti.json"
    config.write_text(json.dumps(lms.config()))
    database = ""
    if request.param == "postgres":
        database = schema_url(request.getfixturevalue("postgres_url"), f"lti2_{os.getpid()}")
    settings = Settings(
        data=str(folder), lti_config=str(config), database_url=database, lti_registration_key=KEY
    )
    app = create_app(settings)
    app.state.lti.grades.backoff = 0.2  # retries in tenths of seconds, not seconds
    with serve_app(app) as url:
        lms.tool = url
        yield url, app


@pytest.fixture()
def c(tool: tuple[str, FastAPI]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=tool[0], timeout=30) as client:
        yield client


def login(c: httpx.Client, lms: FakeLms, client_id: str = CLIENT_ID) -> tuple[str, str]:
    params = {"iss": lms.issuer, "login_hint": "u", "client_id": client_id}
    r = c.get("/lti/login", params=params)
    assert r.status_code == 302, r.text
    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(r.headers["location"]).query))
    assert q["client_id"] == client_id
    c.cookies.clear()
    return q["state"], q["nonce"]


def launch(c: httpx.Client, lms: FakeLms, **claims: Any) -> httpx.Response:
    state, nonce = login(c, lms)
    token = lms.id_token(nonce, **claims)
    cookie = {"Cookie": f"lti1p3-state-{state}={state}"}
    return c.post("/lti/launch", data={"id_token": token, "state": state}, headers=cookie)


def field(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found, page
    return html.unescape(found.group(1))


def session_of(r: httpx.Response) -> str:
    assert r.status_code == 303, r.text
    found = re.fullmatch(r"/\?session=([A-Za-z0-9_-]+)(&predict=1)?", r.headers["location"])
    assert found, r.headers["location"]
    return found.group(1)


def predict(c: httpx.Client, sid: str) -> tuple[bool, float]:
    """One prediction (the first choice): whether it was right, and how long it took."""
    q = c.get(f"/api/sessions/{sid}/question").json()
    choice = [q["choices"][0]["id"]] if q["multiple"] else q["choices"][0]["id"]
    start = time.perf_counter()
    r = c.post(f"/api/sessions/{sid}/predict", json={"choice": choice})
    took = time.perf_counter() - start
    assert r.status_code == 200, r.text
    return bool(r.json()["correct"]), took


def wait_for(count: int, lms: FakeLms, sub: str, seconds: float = 20.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = [s for s in lms.scores if s["userId"] == sub]
        if len(got) >= count:
            return got
        time.sleep(0.05)
    raise AssertionError(f"{count} scores for {sub} expected, got {lms.scores}")


def test_deep_linking_answers_a_signed_resource_link(
    c: httpx.Client, lms: FakeLms, tool: tuple[str, FastAPI]
) -> None:
    r = launch(c, lms, user=TEACHER, deep=True)
    assert r.status_code == 200, r.text
    assert 'value="neuron"' in r.text and 'value="moons"' in r.text
    assert f"predict-first score out of {QUESTIONS}." in r.text
    ticket = field(r.text, "ticket")
    pick = {"ticket": ticket, "kind": "setup", "scenario": "moons", "title": "Week 3: moons"}
    answer = c.post("/lti/deep_link", data=pick)
    assert answer.status_code == 200, answer.text
    csp = answer.headers["content-security-policy"]
    assert f"form-action 'self' {lms.url};" in csp
    assert f'action="{lms.url}/deep_link_return"' in answer.text
    signed = field(answer.text, "JWT")
    lti: Lti = tool[1].state.lti
    claims = jwt.decode(
        signed, lti.key.private.public_key(), algorithms=["RS256"], audience=lms.issuer
    )
    assert claims["iss"] == CLIENT_ID and claims[LTI + "deployment_id"] == DEPLOYMENT
    assert claims[LTI + "message_type"] == "LtiDeepLinkingResponse"
    assert claims[LTI + "version"] == "1.3.0" and claims[DL + "data"] == "dl-data-1"
    item = {
        "type": "ltiResourceLink",
        "title": "Week 3: moons",
        "url": f"{tool[0]}/lti/launch",
        "custom": {"setup": '{"scenario":"moons"}'},
        "lineItem": {"scoreMaximum": 10, "label": "Week 3: moons"},
    }
    assert claims[DL + "content_items"] == [item]
    # the platform verifies it against the tool's JWKS and keeps the link
    back = httpx.post(f"{lms.url}/deep_link_return", data={"JWT": signed})
    assert back.status_code == 200 and lms.links[-1] == item
    # a launch of that link opens its setup: moons
    sid = session_of(launch(c, lms, link="dl-1", custom=item["custom"]))
    assert c.get(f"/api/sessions/{sid}").json()["scenario"] == "moons"


def test_deep_linking_a_snapshot_and_what_is_refused(c: httpx.Client, lms: FakeLms) -> None:
    sid = c.post("/api/sessions", json={"scenario": "parabola"}).json()["id"]
    token = c.post(f"/api/sessions/{sid}/snapshot").json()["snapshot"]
    ticket = field(launch(c, lms, user=TEACHER, deep=True).text, "ticket")
    link = f"https://stepper.example/?snapshot={token}"
    answer = c.post("/lti/deep_link", data={"ticket": ticket, "kind": "snapshot", "snapshot": link})
    assert answer.status_code == 200
    claims = jwt.decode(field(answer.text, "JWT"), options={"verify_signature": False})
    assert claims[DL + "content_items"][0]["custom"] == {"snapshot": token}
    bad = {"ticket": ticket, "kind": "snapshot", "snapshot": "not a <link>"}
    refused = c.post("/lti/deep_link", data=bad)
    assert refused.status_code == 400 and "not a snapshot link" in refused.text
    assert field(refused.text, "ticket")  # the picker again, to try once more
    unknown = c.post("/lti/deep_link", data={"ticket": ticket, "kind": "setup", "scenario": "x"})
    assert unknown.status_code == 400 and "no scenario" in unknown.text
    lesson = c.post("/lti/deep_link", data={"ticket": ticket, "kind": "lesson", "lesson": "<x>"})
    assert lesson.status_code == 400 and "a lesson&#39;s id" in lesson.text
    linked = c.post(
        "/lti/deep_link", data={"ticket": ticket, "kind": "lesson", "lesson": "five-lines"}
    )
    claims = jwt.decode(field(linked.text, "JWT"), options={"verify_signature": False})
    assert claims[DL + "content_items"][0]["custom"] == {"lesson": "five-lines"}
    doc = c.get("/api/lessons/five-lines").json()
    asks = sum(stop.get("question") is not None for stop in doc["stops"])
    assert asks > 0  # the lesson's own questions, not the predict-first ten
    assert claims[DL + "content_items"][0]["lineItem"]["scoreMaximum"] == asks
    gone = c.post("/lti/deep_link", data={"ticket": ticket, "kind": "lesson", "lesson": "nope"})
    assert gone.status_code == 400 and "no such lesson" in gone.text
    forged = c.post("/lti/deep_link", data={"ticket": ticket[:-4] + "AAAA", "kind": "setup"})
    assert forged.status_code == 403 and 'id="lti-check">ticket<' in forged.text


def test_predictions_reach_the_gradebook_with_one_token(
    c: httpx.Client, lms: FakeLms, tool: tuple[str, FastAPI]
) -> None:
    grants = len(lms.assertions)
    sub = f"student-{secrets.token_hex(4)}"
    custom = {"setup": '{"scenario":"neuron"}'}
    sid = session_of(launch(c, lms, link="graded-1", custom=custom, sub=sub))
    rights = [predict(c, sid)[0] for _ in range(3)]
    got = wait_for(3, lms, sub)
    assert [s["scoreGiven"] for s in got] == [sum(rights[: i + 1]) for i in range(3)]
    assert {s["scoreMaximum"] for s in got} == {QUESTIONS}
    assert {s["activityProgress"] for s in got} == {"InProgress"}
    assert {s["gradingProgress"] for s in got} == {"FullyGraded"}
    assert {s["lineitem"] for s in got} == {f"{lms.url}/lineitems/1"}
    assert len(lms.assertions) - grants <= 1  # the bearer token is cached
    assert lms.assertions[-1]["aud"] == f"{lms.url}/token"
    # a session made without the LMS posts nothing
    plain = c.post("/api/sessions", json={}).json()["id"]
    before = len(lms.scores)
    predict(c, plain)
    time.sleep(1.5)
    assert len(lms.scores) == before


def test_a_link_without_a_line_item_opens_without_predict_first(
    c: httpx.Client, lms: FakeLms
) -> None:
    graded = launch(c, lms, link="with-grades")
    assert graded.headers["location"].endswith("&predict=1")
    ungraded = launch(c, lms, link="no-grades", **{AGS: None})
    assert re.fullmatch(r"/\?session=[A-Za-z0-9_-]+", ungraded.headers["location"])
    before = len(lms.scores)
    predict(c, session_of(ungraded))
    time.sleep(1.5)  # the sender's round: nothing for a launch without a line item
    assert len(lms.scores) == before


def test_a_platform_down_never_slows_a_click_and_gets_the_scores_later(
    c: httpx.Client, lms: FakeLms
) -> None:
    sub = f"student-{secrets.token_hex(4)}"
    sid = session_of(launch(c, lms, link="graded-down", sub=sub))
    lms.down = True
    try:
        first, took_first = predict(c, sid)
        second, took_second = predict(c, sid)
        assert max(took_first, took_second) < 2.0
        time.sleep(1.0)  # several tries, each answered 503
        assert [s for s in lms.scores if s["userId"] == sub] == []
    finally:
        lms.down = False
    got = wait_for(2, lms, sub)
    assert [s["scoreGiven"] for s in got] == [int(first), int(first) + int(second)]
    assert got[0]["timestamp"] < got[1]["timestamp"]  # in the order they were given


def test_the_last_question_completes_the_activity() -> None:
    done = score_body("s", QUESTIONS, 12, QUESTIONS, 0.0)
    assert done["activityProgress"] == "Completed" and done["scoreGiven"] == QUESTIONS
    assert done["timestamp"] == "1970-01-01T00:00:00.000+00:00"
    going = score_body("s", 3, 2, QUESTIONS, 0.0)
    assert (going["activityProgress"], going["scoreGiven"]) == ("InProgress", 2)


def test_dynamic_registration(c: httpx.Client, lms: FakeLms, tool: tuple[str, FastAPI]) -> None:
    where = f"{lms.url}/registration/openid-configuration"
    query = {"openid_configuration": where, "registration_token": "reg-token-1", "key": KEY}
    r = c.get("/lti/register", params=query)
    assert r.status_code == 200, r.text
    assert "lti-close.js" in r.text and lms.issuer in r.text
    sent = lms.registrations[-1]
    base = tool[0]
    assert sent["authorization"] == "Bearer reg-token-1"
    assert sent["initiate_login_uri"] == f"{base}/lti/login"
    assert sent["redirect_uris"] == [f"{base}/lti/launch"]
    assert sent["jwks_uri"] == f"{base}/lti/jwks"
    assert sent["logo_uri"] == f"{base}/static/icon.svg"
    assert sent["client_name"] == "Loop Stepper" and SCORE_SCOPE in sent["scope"].split()
    messages = sent["https://purl.imsglobal.org/spec/lti-tool-configuration"]["messages"]
    assert [m["type"] for m in messages] == ["LtiResourceLinkRequest", "LtiDeepLinkingRequest"]
    assert c.get("/static/icon.svg").status_code == 200
    client_id = f"reg-{len(lms.registrations)}"
    kept = [json.loads(b) for i, cid, b in tool[1].state.lti.db.lti_platforms() if cid == client_id]
    assert kept == [
        {
            "auth_login_url": f"{lms.url}/auth",
            "auth_token_url": f"{lms.url}/token",
            "key_set_url": f"{lms.url}/jwks",
            "client_id": client_id,
            "deployment_ids": [f"dep-{client_id}"],
        }
    ]
    login(c, lms, client_id)  # the registered client now logs in
    wrong = c.get("/lti/register", params={**query, "key": "guess"})
    assert wrong.status_code == 403 and 'id="lti-check">key<' in wrong.text
    elsewhere = c.get("/lti/register", params={**query, "openid_configuration": "ftp://x/config"})
    assert elsewhere.status_code == 400
    down = c.get(
        "/lti/register", params={**query, "openid_configuration": f"{lms.url}/nothing-here"}
    )
    assert down.status_code == 502 and "answered 404" in down.text
    assert len(lms.registrations) == int(client_id.split("-")[1])  # nothing more registered


def test_only_an_origin_widens_form_action() -> None:
    """The deep-linking answer's header adds one origin to the CSP's form-action; anything
    that is not a bare http(s) origin leaves the CSP as it was."""
    headers = [(b"content-security-policy", b"default-src 'self'; form-action 'self'; x")]
    good = SecurityMiddleware._widened(headers, b"https://lms.example:8443")
    assert good == [
        (
            b"content-security-policy",
            b"default-src 'self'; form-action 'self' https://lms.example:8443; x",
        )
    ]
    for bad in (b"https://a.example; script-src *", b"javascript:alert(1)", b"* ", b""):
        assert SecurityMiddleware._widened(headers, bad) == headers


GRADED_LESSON: dict[str, Any] = {
    "format": "loop-stepper-lesson/1",
    "title": "Two questions",
    "summary": "",
    "setup": {"scenario": "neuron", "lr": 0.05},
    "stops": [
        {
            "at": 2,
            "title": "The loss",
            "question": {
                "prompt": "What will backward write into weight.grad?",
                "choices": [
                    {"id": "a", "text": "-23.5", "correct": True},
                    {"id": "b", "text": "0", "correct": False},
                ],
            },
        },
        {"at": 3, "title": "Before backward", "question": "auto"},
        {"at": 5, "title": "After step", "expect": {"params": {"weight": [[1.175]]}}},
    ],
}


def test_a_lessons_questions_reach_the_gradebook(
    c: httpx.Client, lms: FakeLms, tool: tuple[str, FastAPI]
) -> None:
    """A lesson's link is graded by the lesson: after each answer, its questions (custom and
    auto) answered right, out of the lesson's questions; Completed once all are answered."""
    made = c.post("/api/lessons", json=GRADED_LESSON).json()
    sub = f"student-{secrets.token_hex(4)}"
    custom = {"lesson": made["id"]}
    sid = session_of(launch(c, lms, link=f"lesson-{made['id']}", custom=custom, sub=sub))
    assert c.post(f"/api/sessions/{sid}/lesson/next-stop").json()["moment"] == 2
    right = c.post(f"/api/sessions/{sid}/lesson/answer", json={"stop": 0, "choices": ["a"]})
    assert right.json()["correct"] is True
    first = wait_for(1, lms, sub)[-1]
    assert (first["scoreGiven"], first["scoreMaximum"]) == (1, 2)
    assert first["activityProgress"] == "InProgress"
    assert c.post(f"/api/sessions/{sid}/lesson/next-stop").json()["moment"] == 3
    said, _ = predict(c, sid)  # the auto question: the prediction made at the stop's moment
    second = wait_for(2, lms, sub)[-1]
    assert (second["scoreGiven"], second["scoreMaximum"]) == (1 + said, 2)
    assert second["activityProgress"] == "Completed"  # both questions answered
    assert c.post(f"/api/sessions/{sid}/lesson/next-stop").json()["moment"] == 5
    assert c.get(f"/api/sessions/{sid}/lesson/score").json()["correct"] == 1 + said
    predict(c, sid)  # a prediction at no stop's auto question: not the lesson's
    time.sleep(0.5)  # a walk with no answer posts nothing more
    assert len(wait_for(2, lms, sub)) == 2
