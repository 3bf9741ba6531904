"""The page on a server whose disk fills (issue 27 item 4): Next line answered 507 shows the
server's message where a refusal shows, and the page stays on the session as the server
holds it; once there is space again, the next click runs, once."""

from __future__ import annotations

import tempfile

import httpx
import pytest
from playwright.sync_api import Page, expect

from app.main import create_app
from app.settings import Settings
from support.serve import serve_app

from .conftest import attach

pytestmark = pytest.mark.browser
UNLIMITED = 1_073_741_823  # SQLite's max_page_count default


def test_a_full_disk_is_said_on_the_page_and_the_line_runs_after(page: Page) -> None:
    app = create_app(Settings(data=tempfile.mkdtemp(prefix="loop-stepper-full-")))
    db = app.state.sessions.db

    def full(pages: int | None) -> None:
        with db._lock:  # the pragma is the server's writing connection's own
            if pages is None:
                pages = db._db.execute("PRAGMA page_count").fetchone()[0]
            db._db.execute(f"PRAGMA max_page_count = {pages}")

    with serve_app(app) as base:
        watch = attach(page)
        page.goto(f"{base}/")
        page.wait_for_selector("body[data-ready='1']")
        body, problem = page.locator("body"), page.locator("#problem")
        full(None)
        statuses: list[int] = []
        for _ in range(300):  # until a line needs a page the file may not grow by
            renders = int(body.get_attribute("data-renders") or 0)
            with page.expect_response(lambda r: "/next" in r.url) as answered:
                page.get_by_role("button", name="Next line").click()
            statuses.append(answered.value.status)
            # a line renders its Session; a 507 renders the one the server still holds
            expect(body).to_have_attribute("data-renders", str(renders + 1))
            if statuses[-1] != 200:
                break
        assert statuses[-1] == 507, statuses[-3:]
        expect(problem).to_be_visible()
        expect(problem).to_contain_text("the server's disk is full, so this was not saved")
        sid = answered.value.url.split("/api/sessions/")[1].split("/")[0]
        held = httpx.get(f"{base}/api/sessions/{sid}", timeout=30).json()
        assert held["moment"] == len(statuses) - 1  # each line acknowledged, none more

        full(UNLIMITED)
        with page.expect_response(lambda r: "/next" in r.url) as answered:
            page.get_by_role("button", name="Next line").click()
        assert answered.value.status == 200
        expect(problem).to_be_hidden()
        assert httpx.get(f"{base}/api/sessions/{sid}", timeout=30).json()["moment"] == len(statuses)
        watch.check(base)
