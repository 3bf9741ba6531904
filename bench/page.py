"""Benchmark the page: click -> stores repainted, and the page's total weight.

    python bench/page.py [--clicks 40]

Starts the real server on a free loopback port and drives Debian's Chromium headless.
Prints one table:
- render: the page's own performance.now() around painting one Session into every view
  (window.loopStepper.stats, measured by static/js/paint.js);
- click to paint (page): from the click event's timestamp to the animation frame after the
  repaint, measured in the page, so it includes the HTTP round trip and PyTorch running the
  line but not Playwright;
- click to paint (Playwright): the same seen from outside, including Playwright's own
  actionability checks and polling (an upper bound);
- weight: bytes of every response the page loads on first visit (HTML, CSS, JS, API JSON).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from playwright.sync_api import Page, Response, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.serve import serve

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def click_to_paint(page: Page) -> float:
    """Milliseconds from a click on Next line to the frame after the page repainted."""
    before = int(page.locator("body").get_attribute("data-renders") or 0)
    start = time.perf_counter()
    page.get_by_role("button", name="Next line").click()
    page.locator(f"body[data-renders='{before + 1}']").wait_for()
    # one animation frame later the browser has painted what render() changed
    page.evaluate("new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))")
    return (time.perf_counter() - start) * 1000


def measure(base: str, scenario: str, clicks: int) -> dict[str, float]:
    sizes: dict[str, int] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 900})

        def on_response(response: Response) -> None:
            try:
                sizes[response.url] = len(response.body())
            except Exception:  # a redirect or aborted response has no body
                sizes.setdefault(response.url, 0)

        page.on("response", on_response)
        page.goto(f"{base}/?scenario={scenario}")
        page.locator("body[data-ready='1']").wait_for()
        page.wait_for_load_state("networkidle")
        weight = sum(sizes.values())
        for _ in range(3):  # warm up: first paints build the DOM
            click_to_paint(page)
        page.evaluate("window.loopStepper.stats.renderMs.length = 0")
        page.evaluate("window.loopStepper.stats.clickToPaintMs.length = 0")
        totals = [click_to_paint(page) for _ in range(clicks)]
        renders = page.evaluate("window.loopStepper.stats.renderMs")
        inside = page.evaluate("window.loopStepper.stats.clickToPaintMs")
        browser.close()
    return {
        "render_median": statistics.median(renders),
        "render_max": max(renders),
        "inside_median": statistics.median(inside),
        "inside_p90": sorted(inside)[int(0.9 * (len(inside) - 1))],
        "click_median": statistics.median(totals),
        "weight": weight,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=40)
    args = parser.parse_args()
    rows = []
    with serve() as base:
        for scenario in ("neuron", "moons"):
            rows.append((scenario, measure(base, scenario, args.clicks)))
    head = (
        "scenario",
        "render med ms",
        "render max ms",
        "click→paint (page) med ms",
        "p90 ms",
        "click→paint (Playwright) med ms",
        "page weight bytes",
    )
    print(" | ".join(head))
    print(" | ".join("-" * len(h) for h in head))
    for name, r in rows:
        print(
            f"{name} | {r['render_median']:.2f} | {r['render_max']:.2f} | "
            f"{r['inside_median']:.1f} | {r['inside_p90']:.1f} | {r['click_median']:.1f} | "
            f"{int(r['weight'])}"
        )


if __name__ == "__main__":
    main()
