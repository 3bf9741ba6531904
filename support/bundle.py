"""The notebook widget's bundle: the page's ES modules that ``static/js/widget.js`` imports, in
one file (``loop_stepper/notebook/widget.js``), and the page's styles scoped to the widget
(``loop_stepper/notebook/widget.css``). anywidget loads its ``_esm`` as one string from a Blob URL,
where relative imports do not resolve, so the modules are bundled by esbuild (npm, pinned in
package.json) at build time; the page itself keeps loading them one by one, unbundled.

    npm ci && python -m support.bundle           # build both files
    python -m support.bundle --check             # exit 1 when a bundle is older than its sources

Each file starts with a comment naming its sources and the SHA-256 of their bytes, so the
check (and tests/notebook/test_bundle.py, in CI) needs no Node.js: a source changed since the
build no longer matches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "static/js/widget.js"
CSS = ("static/css/page.css", "static/css/widget.css")
OUT_JS = ROOT / "loop_stepper" / "notebook" / "widget.js"
OUT_CSS = ROOT / "loop_stepper" / "notebook" / "widget.css"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
HEADER = re.compile(r"^/\* loop-stepper bundle: sha256 ([0-9a-f]{64}) of (.+) \*/$")
IMPORT = re.compile(r"""^\s*import\s[^;]*?from\s+["'](\.[^"']+)["']""", re.MULTILINE | re.DOTALL)


def modules(entry: str = ENTRY) -> list[str]:
    """Every module ``entry`` imports, itself included, followed through relative imports."""
    found: list[str] = []
    todo = [entry]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.append(path)
        here = (ROOT / path).parent
        for target in IMPORT.findall((ROOT / path).read_text()):
            todo.append(str((here / target).resolve().relative_to(ROOT)))
    return sorted(found)


def digest(paths: list[str]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.encode() + b"\0" + (ROOT / path).read_bytes() + b"\0")
    return h.hexdigest()


def header(paths: list[str]) -> str:
    return f"/* loop-stepper bundle: sha256 {digest(paths)} of {' '.join(paths)} */\n"


def scoped_css() -> str:
    """page.css inside ``.loop-stepper { … }`` (its ``:root`` variables on the widget itself,
    its ``body`` rule dropped), then widget.css: the page's look, and nothing of the notebook's
    own page restyled. esbuild lowers the nesting."""
    page = (ROOT / CSS[0]).read_text()
    page = re.sub(r"(?m)^:root \{", "& {", page)
    page = re.sub(r"(?ms)^body \{.*?^\}\n", "", page)
    return f".loop-stepper {{\n{page}\n}}\n" + (ROOT / CSS[1]).read_text()


def build() -> None:
    if not ESBUILD.exists():
        sys.exit("esbuild is not installed: run `npm ci` in the repository first")
    common = ["--minify-syntax", "--legal-comments=none", "--log-level=warning"]
    js = subprocess.run(
        [str(ESBUILD), ENTRY, "--bundle", "--format=esm", "--target=es2020", *common],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".css", dir=ROOT, delete=False) as f:
        f.write(scoped_css())
        scratch = Path(f.name)
    try:
        css = subprocess.run(
            [str(ESBUILD), scratch.name, "--loader:.css=css", "--target=chrome100", *common],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        scratch.unlink()
    OUT_JS.write_text(header(modules()) + js)
    OUT_CSS.write_text(header(list(CSS)) + css)


def stale() -> list[str]:
    """The bundles older than their sources (or naming other sources than they now have)."""
    wrong = []
    for out, sources in ((OUT_JS, modules()), (OUT_CSS, list(CSS))):
        first = out.read_text().split("\n", 1)[0] if out.exists() else ""
        match = HEADER.match(first)
        if match is None or match.group(2).split() != sources or match.group(1) != digest(sources):
            wrong.append(str(out.relative_to(ROOT)))
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether a bundle is stale")
    if parser.parse_args().check:
        wrong = stale()
        print(json.dumps({"stale": wrong}))
        sys.exit(1 if wrong else 0)
    build()


if __name__ == "__main__":
    main()
