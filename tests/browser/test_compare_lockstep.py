"""Issue 17, compare mode in lockstep (the lesson's F4, "wrong beside right"), in real Chromium:
the two programs lined up like a diff, one Next line runs one row of both, a line only one loop
has is a skipped slot on the other side, and both loops stand at the same iteration and row at
every click. What each side shows is checked against its session on the server, and each
session against a twin session stepped directly through the same lines."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from .conftest import Watch, shot
from .test_bugs import click_and_render, open_page

pytestmark = pytest.mark.browser
SIDES = ("correct", "bug")
# the default loop and the two bugs, as the server's presets spell them
CORRECT = ["forward", "loss", "zero_grad", "backward", "step"]
SKIP_ZERO_GRAD = ["forward", "loss", "backward", "step"]
STEP_FIRST = ["forward", "loss", "zero_grad", "step", "backward"]


def pane(page: Page, side: str) -> Locator:
    return page.locator(f'[data-pane="{side}"]')


def pair(page: Page) -> dict[str, dict[str, Any]]:
    """Both sessions as the server has them now."""
    ids = json.loads(page.evaluate("sessionStorage.getItem('loop-stepper.compare')"))
    return {side: page.request.get(f"/api/sessions/{ids[side]}").json() for side in SIDES}


def shown(page: Page) -> dict[str, tuple[int, int]]:
    """Per side: the iteration its status line says and the highlighted (next) row, read off
    the page; the row is both the button's row number and its place in the code list."""
    out: dict[str, tuple[int, int]] = {}
    for side in SIDES:
        text = pane(page, side).locator(".iteration").inner_text()
        found = re.match(r"iteration (\d+), row (\d+) of (\d+), next: ", text)
        assert found, text
        current = pane(page, side).locator('button.line[aria-current="step"]')
        expect(current).to_have_count(1)
        row = int(current.get_attribute("data-row") or -1)
        place = current.evaluate(
            "b => [...b.closest('[role=list]').children].indexOf(b.parentElement)"
        )
        assert place == row == int(found[2]) - 1, (side, text, row, place)
        out[side] = (int(found[1]), row)
    return out


def next_row(page: Page, key: bool = False) -> None:
    if key:  # the keyboard's way: n on the page
        before = page.locator("body").get_attribute("data-renders")
        page.keyboard.press("n")
        expect(page.locator("body")).not_to_have_attribute("data-renders", str(before))
    else:
        click_and_render(page, page.get_by_role("button", name="Next line"))


def twin(page: Page, session: dict[str, Any], program: list[str], lines: int) -> dict[str, Any]:
    """A new session with the same scenario, seed, lr and program, stepped `lines` times."""
    body = {"scenario": session["scenario"], "seed": session["seed"], "lr": session["lr"]}
    made: dict[str, Any] = page.request.post(
        "/api/sessions", data={**body, "program": program}
    ).json()
    assert made["program"] == program
    for _ in range(lines):
        made = page.request.post(f"/api/sessions/{made['id']}/next").json()
    return made


def same_numbers(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key in ("iteration", "cursor", "next_line", "loss", "params", "history"):
        assert a[key] == b[key], key


def expect_slot(page: Page, side: str, row: int, entry: str, source: str) -> None:
    slot = pane(page, side).locator(f'button.line[data-row="{row}"]')
    expect(slot).to_have_class(re.compile(r"\bskipped\b"))
    expect(slot).to_have_attribute("data-line", entry)
    expect(slot.locator(".state")).to_contain_text("skipped")
    expect(slot.locator(".src")).to_have_text(source)
    expect(slot).to_have_attribute("aria-description", re.compile(r"^Skipped: nothing runs here"))


def test_skip_zero_grad_on_moons_twelve_clicks(page: Page, watch: Watch) -> None:
    page = open_page(page, "/?compare=skip_zero_grad&scenario=moons")
    expect(pane(page, "correct").locator("button.line")).to_have_count(5)
    expect(pane(page, "bug").locator("button.line")).to_have_count(5)  # 4 lines and a slot
    expect_slot(page, "bug", 2, "zero_grad", "optimizer.zero_grad()")
    for click in range(1, 13):
        next_row(page, key=click % 3 == 0)
        now = shown(page)
        assert now["correct"] == now["bug"], (click, now)
        assert now["correct"][1] == click % 5, (click, now)
    assert shown(page) == {"correct": (3, 2), "bug": (3, 2)}
    for side in SIDES:
        expect(pane(page, side).locator(".iteration")).to_contain_text("iteration 3, row 3 of 5")
    # the row both stand at: the correct loop's zero_grad, a skipped slot beside it
    current = {side: pane(page, side).locator('button.line[aria-current="step"]') for side in SIDES}
    expect(current["correct"]).to_have_attribute("data-line", "zero_grad")
    expect(current["correct"]).not_to_have_class(re.compile(r"\bskipped\b"))
    expect(current["correct"].locator(".state")).to_have_text("next")
    expect(current["bug"].locator(".state")).to_have_text("next, skipped")
    expect(pane(page, "bug").locator(".iteration")).to_contain_text(
        "next: skipped (only the correct loop has zero_grad)"
    )
    expect(pane(page, "bug").locator('button.line[data-row="1"]')).to_have_class(
        re.compile(r"\bran\b")
    )
    shot(page, "compare-lockstep-skip-zero-grad")

    server = pair(page)
    correct, bug = server["correct"], server["bug"]
    assert correct["iteration"] == bug["iteration"] == 3
    assert (correct["next_line"], bug["next_line"]) == ("zero_grad", "backward")
    assert correct["program"] == CORRECT and bug["program"] == SKIP_ZERO_GRAD
    # 12 rows: 2 whole iterations and forward, loss; the bug's side skipped 2 slots
    same_numbers(correct, twin(page, correct, CORRECT, 12))
    same_numbers(bug, twin(page, bug, SKIP_ZERO_GRAD, 10))
    assert correct["loss"] != bug["loss"]  # stale gradients: the bug's loop went elsewhere
    for side, session in server.items():
        loss = pane(page, side).locator(".loss-value .value")
        expect(loss).to_have_attribute("title", re.compile(rf"\(exactly {session['loss']}\)$"))

    # one more row: the correct loop empties its buffers, the bug's side runs nothing
    next_row(page)
    after = pair(page)
    for key in ("iteration", "cursor", "loss", "params"):
        assert after["bug"][key] == bug[key], key
    assert after["correct"]["cursor"] == 3 and shown(page) == {"correct": (3, 3), "bug": (3, 3)}
    expect(page.locator("#announcer")).to_contain_text("With the bug: zero_grad skipped")


def test_step_first_reorders_and_both_finish_together(page: Page, watch: Watch) -> None:
    """step_first: an LCS puts the bug's early step in a row of its own and the correct loop's
    step two rows later; every row is reached, both finish the iteration at the same click."""
    page = open_page(page, "/?compare=step_first&scenario=moons")
    expected = [  # (row, what the correct side shows, what the bug's side shows)
        ("forward", "forward"),
        ("loss", "loss"),
        ("zero_grad", "zero_grad"),
        (None, "step"),
        ("backward", "backward"),
        ("step", None),
    ]
    for side, k in (("correct", 0), ("bug", 1)):
        lines = pane(page, side).locator("button.line")
        expect(lines).to_have_count(6)
        for row, entries in enumerate(expected):
            entry = entries[k] or entries[1 - k]
            expect(lines.nth(row)).to_have_attribute("data-line", str(entry))
            if entries[k] is None:
                expect_slot(page, side, row, str(entry), "optimizer.step()")
    for click in range(1, 6 * 2 + 4):
        next_row(page, key=click % 2 == 0)
        now = shown(page)
        # the iteration goes up on both at the same click (the shared forward), and the
        # rows wrap to 0 on both at the same click, when the last row (a slot for the bug) ran
        iteration = (click - 1) // 6 + 1
        assert now["correct"] == now["bug"] == (iteration, click % 6), (click, now)
        server = pair(page)
        assert server["correct"]["iteration"] == server["bug"]["iteration"] == iteration
        # the correct loop's last line is in the last row; the bug's ended a row earlier
        assert (server["correct"]["cursor"] == 0) == (click % 6 == 0), click
        assert (server["bug"]["cursor"] == 0) == (click % 6 in (0, 5)), click
    # at row 4 of iteration 3: next, the bug steps alone (the correct side's slot is skipped)
    assert shown(page) == {"correct": (3, 3), "bug": (3, 3)}
    expect(pane(page, "correct").locator(".iteration")).to_contain_text(
        "next: skipped (only the loop with the bug has step)"
    )
    server = pair(page)
    same_numbers(server["correct"], twin(page, server["correct"], CORRECT, 5 + 5 + 3))
    same_numbers(server["bug"], twin(page, server["bug"], STEP_FIRST, 5 + 5 + 3))
    next_row(page)
    next_row(page)  # row 6 next: the correct loop's step; the bug has finished this iteration
    assert shown(page) == {"correct": (3, 5), "bug": (3, 5)}
    assert pair(page)["bug"]["cursor"] == 0 and pair(page)["correct"]["cursor"] == 4

    # Run 1 from there: the bug's side has nothing left, the correct one steps: row 0 together
    page.get_by_label("Iterations", exact=True).fill("1")
    click_and_render(page, page.get_by_role("button", name="Run", exact=True))
    assert shown(page) == {"correct": (3, 0), "bug": (3, 0)}
    page.get_by_label("Iterations", exact=True).fill("2")
    click_and_render(page, page.get_by_role("button", name="Run", exact=True))
    assert shown(page) == {"correct": (5, 0), "bug": (5, 0)}
    server = pair(page)
    same_numbers(server["correct"], twin(page, server["correct"], CORRECT, 25))
    same_numbers(server["bug"], twin(page, server["bug"], STEP_FIRST, 25))
    assert server["bug"]["history"][0]["loss"] == server["correct"]["history"][0]["loss"]


def test_a_line_that_raises_stops_that_loop_and_the_other_goes_on(page: Page, watch: Watch) -> None:
    """backward twice: the bug's second backward (a row of its own) raises PyTorch's error.
    That loop stopped there, as the script would; the pair is out of step and says so, the
    correct loop still runs on each click (no deadlock), and Reset lines both up again."""
    page = open_page(page, "/?compare=backward_twice")
    expect_slot(page, "correct", 4, "backward", "loss.backward()")
    for _ in range(4):
        next_row(page)
    assert shown(page) == {"correct": (1, 4), "bug": (1, 4)}
    next_row(page)
    bug, correct = pane(page, "bug"), pane(page, "correct")
    expect(bug.get_by_role("alert")).to_contain_text("backward through the graph a second time")
    expect(correct.get_by_role("alert")).to_be_hidden()
    assert page.locator("body").get_attribute("data-lockstep") == "apart"
    expect(correct.locator(".iteration")).to_have_text(
        "iteration 1, next: step (out of step: Reset lines the loops up again)"
    )
    next_row(page)  # the correct loop steps; the bug's backward raises again
    expect(bug.get_by_role("alert")).to_contain_text("backward through the graph a second time")
    server = pair(page)
    assert server["correct"]["params"][0]["value"] == [[pytest.approx(1.175, abs=1e-6)]]
    assert server["bug"]["cursor"] == 4 and server["correct"]["cursor"] == 0
    click_and_render(page, page.get_by_role("button", name="Reset"))
    assert shown(page) == {"correct": (0, 0), "bug": (0, 0)}
    expect(bug.get_by_role("alert")).to_be_hidden()


# the alignment's own checks, run in the page's module as served (static/js/align.js)
WALK = """async ([pairs, clicks]) => {
  const { align, position, runCounts } = await import("./static/js/align.js");
  return pairs.map(([a, b]) => {
    const rows = align(a, b);
    const lengths = { a: a.length, b: b.length };
    const trace = [];
    let ca = 0, cb = 0, ia = 0, ib = 0;
    for (let click = 0; click < clicks; click++) {
      const at = position(rows, lengths, { a: ca, b: cb });
      const run = at === null ? null : runCounts(rows, lengths, { a: ca, b: cb }, at, 1);
      trace.push([at, ia, ib, run && run.a, run && run.b]);
      if (at === null) break;
      const row = rows[at];
      if (row.a !== null) { ia += a[ca] === "forward"; ca = (ca + 1) % a.length; }
      if (row.b !== null) { ib += b[cb] === "forward"; cb = (cb + 1) % b.length; }
    }
    return { rows, trace };
  });
}"""


def test_alignment_of_every_preset_and_random_programs(page: Page, watch: Watch) -> None:
    """Rows keep each program's order and cover every line once; equal entries only share a
    row; all forwards are matched when both have as many; the pair's place read off the two
    cursors is every row in turn, never lost (no deadlock); Run from any row ends both at row 0."""
    page = open_page(page, "/")
    presets = page.request.get("/api/presets").json()
    correct = next(p["program"] for p in presets if p["name"] == "correct")
    pairs = [[correct, p["program"]] for p in presets]
    rng = __import__("random").Random(17)
    entries = ["forward", "loss", "zero_grad", "backward", "step", "clip_grad_norm", "eval"]
    for _ in range(150):
        a = ["forward", *rng.choices(entries, k=rng.randint(0, 5))]
        b = ["forward", *rng.choices(entries, k=rng.randint(0, 5))]
        pairs.append([rng.sample(a, len(a)), rng.sample(b, len(b))])
    walked = page.evaluate(WALK, [pairs, 30])
    for (a, b), got in zip(pairs, walked, strict=True):
        rows, trace = got["rows"], got["trace"]
        for side, program in (("a", a), ("b", b)):
            assert [r[side] for r in rows if r[side] is not None] == list(range(len(program)))
            assert all(r[side] is None or program[r[side]] == r["entry"] for r in rows)
        assert all(r["a"] is not None or r["b"] is not None for r in rows)
        if a.count("forward") == b.count("forward"):
            assert all(
                r["a"] is not None and r["b"] is not None for r in rows if r["entry"] == "forward"
            )
        assert len(trace) == 30, (a, b, trace)  # never out of step, never stuck
        assert [t[0] for t in trace] == [k % len(rows) for k in range(30)], (a, b)
        if a.count("forward") == b.count("forward"):
            assert all(ia == ib for _, ia, ib, _, _ in trace), (a, b, trace)
        for at, *_, run_a, run_b in trace:
            # Run 1: a loop that already finished this iteration runs none; at row 0 both run 1
            assert (run_a, run_b) == (1, 1) if at == 0 else {run_a, run_b} <= {0, 1}
    step_first = next(w for (_, b), w in zip(pairs, walked, strict=True) if b == STEP_FIRST)
    assert [(r["a"], r["b"], r["entry"]) for r in step_first["rows"]] == [
        (0, 0, "forward"),
        (1, 1, "loss"),
        (2, 2, "zero_grad"),
        (None, 3, "step"),
        (3, 4, "backward"),
        (4, None, "step"),
    ]


def test_the_pair_outlives_a_reload_and_an_expired_session_starts_a_new_one(
    page: Page, watch: Watch
) -> None:
    """The pair's lifecycle (pair.js) through the page's one queue: a reload finds the same two
    sessions at the same row; when one of them is gone from the server, the next click makes
    a new pair in its turn and says so, and the clicks after it drive the new pair."""
    page = open_page(page, "/?compare=skip_zero_grad")
    next_row(page)
    next_row(page)
    before = pair(page)
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert {s: p["id"] for s, p in pair(page).items()} == {s: p["id"] for s, p in before.items()}
    assert shown(page) == {"correct": (1, 2), "bug": (1, 2)}
    expect(page.locator("body")).to_have_attribute("data-lockstep", "2")

    page.request.delete(f"/api/sessions/{before['correct']['id']}")
    next_row(page)  # row 2, zero_grad: the correct side answers 404, a new pair at row 0
    expect(page.locator("#announcer")).to_have_text(
        "The sessions had expired, so new ones were started."
    )
    fresh = pair(page)
    assert fresh["bug"]["id"] != before["bug"]["id"]
    assert fresh["bug"]["program"] == SKIP_ZERO_GRAD
    assert shown(page) == {"correct": (0, 0), "bug": (0, 0)}
    next_row(page)
    assert shown(page) == {"correct": (1, 1), "bug": (1, 1)}
    assert pair(page)["bug"]["cursor"] == 1
