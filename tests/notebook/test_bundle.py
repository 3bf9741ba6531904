"""The widget's bundle is the page's own modules, and never older than they are."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import bundle


def test_the_bundle_is_not_older_than_its_sources() -> None:
    """CI fails here when a module the widget imports (or page.css) changed since the build:
    rebuild with `npm ci && python -m support.bundle`."""
    assert bundle.stale() == []


def test_the_widget_draws_the_stores_with_the_pages_modules() -> None:
    sources = bundle.modules()
    for shared in ("params.js", "grads.js", "graph.js", "loss.js", "optstate.js", "marks.js"):
        assert f"static/js/views/{shared}" in sources
    header = bundle.OUT_JS.read_text().split("\n", 1)[0]
    assert header.endswith(" ".join(sources) + " */")


def test_a_changed_source_makes_it_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "repo"
    for part in ("static", "loop_stepper/notebook"):
        shutil.copytree(bundle.ROOT / part, copy / part)
    monkeypatch.setattr(bundle, "ROOT", copy)
    monkeypatch.setattr(bundle, "OUT_JS", copy / "loop_stepper/notebook/widget.js")
    monkeypatch.setattr(bundle, "OUT_CSS", copy / "loop_stepper/notebook/widget.css")
    assert bundle.stale() == []
    grads = copy / "static/js/views/grads.js"
    grads.write_text(grads.read_text() + "\n// changed\n")
    assert bundle.stale() == ["loop_stepper/notebook/widget.js"]


@pytest.mark.skipif(not bundle.ESBUILD.exists(), reason="esbuild not installed (npm ci)")
def test_the_bundle_is_what_esbuild_makes_of_them(tmp_path: Path) -> None:
    before = bundle.OUT_JS.read_bytes(), bundle.OUT_CSS.read_bytes()
    try:
        subprocess.run([sys.executable, "-m", "support.bundle"], cwd=bundle.ROOT, check=True)
        assert (bundle.OUT_JS.read_bytes(), bundle.OUT_CSS.read_bytes()) == before
    finally:
        bundle.OUT_JS.write_bytes(before[0])
        bundle.OUT_CSS.write_bytes(before[1])
