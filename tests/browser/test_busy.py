"""The page rides out a busy server (issue 20): a create, a fork or a line answered 503 with
Retry-After is sent again, the same request, after saying "Busy — retrying…" in the live
region; the numbers are then PyTorch's, and each click ran exactly once on the server.
And the QR library loads only when an instructor starts a lecture."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, expect

from .conftest import Watch, attach
from .test_page import value

pytestmark = pytest.mark.browser
BUSY = "Busy — retrying…"
CREATE = re.compile(r"/api/sessions$")
LINE = re.compile(r"/api/sessions/[^/?]+/(next|forward|loss|zero_grad|backward|step)\?")
FORK = re.compile(r"/api/lectures/[^/?]+/fork$")
QR = "/static/vendor/qrcode-generator/qrcode.js"


class BusyOnce:
    """Answers the first request a route catches with 503 + Retry-After: 1 (the server never
    sees it), passes every later one through, and counts what reached the server."""

    def __init__(self) -> None:
        self.refused: list[str] = []
        self.refused_body: str | None = None
        self.reached: list[tuple[str, str, str | None]] = []  # method, url, body

    def __call__(self, route: Route) -> None:
        request = route.request
        if not self.refused:
            self.refused.append(request.url)
            self.refused_body = request.post_data
            route.fulfill(
                status=503,
                headers={"Retry-After": "1", "content-type": "application/json"},
                body='{"detail": "the server is busy; try again"}',
            )
            return
        self.reached.append((request.method, request.url, request.post_data))
        route.fallback()


def session_of(base_url: str, sid: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx.get(f"{base_url}/api/sessions/{sid}", timeout=30).json()
    return data


def shows_the_gradients(page: Page) -> None:
    """The worked example's gradients after backward, on the page and in the live region."""
    expect(page.locator("#announcer")).to_have_text(re.compile(r"backward: weight.grad -23.5"))
    assert value(page, "Gradients", "weight") == "-23.5"
    assert value(page, "Gradients", "bias") == "-8"


def worked_example_after_backward(page: Page, base_url: str, lines: BusyOnce) -> None:
    """forward, loss, zero_grad, backward by Next line, the first of them refused once."""
    for n in range(4):
        before = int(page.locator("body").get_attribute("data-renders") or 0)
        page.get_by_role("button", name="Next line").click()
        if n == 0:  # the refused click: the page says it is retrying, then runs it once
            expect(page.locator("#announcer")).to_have_text(BUSY)
        expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1))
    shows_the_gradients(page)
    assert len(lines.refused) == 1
    # each click reached the server exactly once: the refused one was sent again, never twice
    assert [url.split("?")[0].rsplit("/", 1)[1] for _, url, _ in lines.reached] == ["next"] * 4
    assert lines.reached[0][1] == lines.refused[0]  # the same request (its ?since too)


def test_a_busy_create_and_line_are_retried_once_each(
    page: Page, watch: Watch, base_url: str
) -> None:
    created, lines = BusyOnce(), BusyOnce()
    page.route(CREATE, created)
    page.route(LINE, lines)
    page.goto("/")
    expect(page.locator("#announcer")).to_have_text(BUSY)
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator("#announcer")).to_have_text(re.compile(r"^Ready: neuron"))
    assert len(created.refused) == 1
    assert [(m, url.rsplit("/", 2)[-2:]) for m, url, _ in created.reached] == [
        ("POST", ["api", "sessions"])
    ]
    assert created.reached[0][2] == created.refused_body  # the same setup, sent again
    sid: str = page.evaluate("window.loopStepper.session.id")
    worked_example_after_backward(page, base_url, lines)
    server = session_of(base_url, sid)
    assert server["moment"] == 4 and server["iteration"] == page.evaluate(
        "window.loopStepper.session.iteration"
    )
    assert server["last"]["line"] == "backward"
    grads = {p["name"]: p["grad"] for p in server["params"]}
    assert grads == {"weight": [[-23.5]], "bias": [-8.0]}


def test_a_busy_fork_is_retried_once_then_the_copy_runs_its_lines(
    browser: Browser, base_url: str
) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        sid = client.post("/api/sessions", json={}).json()["id"]
        for _ in range(2):  # forward, loss: the lecture's moment 2
            assert client.post(f"/api/sessions/{sid}/next").status_code == 200
        code = client.post(f"/api/sessions/{sid}/lecture").json()["code"]
    context = browser.new_context(base_url=base_url)
    page = context.new_page()
    seen = attach(page)
    forks, lines = BusyOnce(), BusyOnce()
    page.route(FORK, forks)
    page.route(LINE, lines)
    page.goto(f"/l/{code}")
    expect(page.locator("#live-badge")).to_have_text("Following — live")
    page.get_by_role("button", name="Try it yourself").click()
    expect(page.locator("#follow-status")).to_have_text(BUSY)
    page.wait_for_url(re.compile(r"\?from=lecture"))
    page.wait_for_selector("body[data-ready='1']")
    assert len(forks.refused) == 1 and len(forks.reached) == 1  # one copy, made once
    mine: str = page.evaluate("window.loopStepper.session.id")
    assert mine != sid
    assert session_of(base_url, mine)["moment"] == 2  # exactly at the lecture's moment
    expect(page.locator("#announcer")).to_have_text("loss: 18.5.")  # the page has it
    for n in range(2):  # zero_grad, backward: the first refused once
        before = int(page.locator("body").get_attribute("data-renders") or 0)
        page.get_by_role("button", name="Next line").click()
        if n == 0:
            expect(page.locator("#announcer")).to_have_text(BUSY)
        expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1))
    shows_the_gradients(page)
    assert len(lines.reached) == 2
    server = session_of(base_url, mine)
    assert server["moment"] == 4 and server["last"]["line"] == "backward"
    assert session_of(base_url, sid)["moment"] == 2  # the lecture did not move
    context.close()
    seen.check(base_url)


def test_a_busy_server_past_the_bound_shows_the_error(page: Page, watch: Watch) -> None:
    """Always busy: bounded retries (a few seconds here), then the error as before."""
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']")
    page.evaluate(
        "import('./static/js/api.js').then((m) => Object.assign(m.RETRY, {budget: 3000}))"
    )
    tries: list[str] = []

    def always(route: Route) -> None:
        tries.append(route.request.url)
        route.fulfill(status=429, body='{"detail": "this session is still busy"}')

    page.route(LINE, always)
    page.get_by_role("button", name="Next line").click()
    expect(page.locator("#announcer")).to_have_text(BUSY)
    expect(page.locator("#problem")).to_contain_text("this session is still busy", timeout=10_000)
    assert 2 <= len(tries) <= 4  # 0.5, 1, 2 s of backoff (with jitter) fit in 3 s at most
    assert len(set(tries)) == 1  # the same request each time


def requested(urls: list[str], path: str) -> bool:
    return any(url.split("?")[0].endswith(path) for url in urls)


def test_the_qr_library_loads_only_when_a_lecture_starts(
    stepper: Page, watch: Watch, browser: Browser, base_url: str
) -> None:
    page = stepper
    page.wait_for_load_state("networkidle")
    assert requested(watch.urls, "/static/js/lecture.js")  # the panel's own code is there
    assert not requested(watch.urls, QR)
    # a student joining a lecture does not load it either
    with httpx.Client(base_url=base_url, timeout=30) as client:
        sid = client.post("/api/sessions", json={}).json()["id"]
        code = client.post(f"/api/sessions/{sid}/lecture").json()["code"]
    context = browser.new_context(base_url=base_url)
    student = context.new_page()
    seen = attach(student)
    student.goto(f"/l/{code}")
    expect(student.locator("#live-badge")).to_have_text("Following — live")
    student.wait_for_timeout(500)
    assert not requested(seen.urls, QR) and requested(seen.urls, "/static/js/follow.js")
    context.close()
    # the instructor starts a lecture: now it loads, and draws the join link's code
    page.get_by_role("button", name="Start a lecture").click()
    expect(page.locator("#lecture-qr svg")).to_be_visible()
    assert requested(watch.urls, QR)
