"""The docs hold up: every setting has its row in docs/deploy.md, every relative link in the
README and docs/ resolves (the file, and a #anchor to a heading GitHub would make), and the
README stays a short front page.

Pure Python: reads the Markdown and the Settings model at test time (a setting another branch
adds is checked the day it lands), starts nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import AliasChoices
from pydantic.fields import FieldInfo

from app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
DEPLOY = DOCS / "deploy.md"
# Other branches' notes, folded into docs/ when they merge: not part of the docs yet.
INCOMING = DOCS / "incoming"
SACRED = (
    'pip install -e ".[server]" -c requirements.lock && loop-stepper',
    "bash .ci/run",
)

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
_HTML_TARGET = re.compile(r"<(?:img|a)\s[^>]*?(?:src|href)=\"([^\"]+)\"", re.IGNORECASE)
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_HTML_ID = re.compile(r"<a\s[^>]*?(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)


def shown(path: Path) -> str:
    """A path as a message names it: from the repository's root when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def markdown_files() -> list[Path]:
    """README.md and every Markdown file under docs/, docs/incoming/ left out."""
    docs = [p for p in sorted(DOCS.rglob("*.md")) if INCOMING not in p.parents]
    return [README, *docs]


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks: a `#` in a shell block is no heading."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            yield number, line


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation dropped, spaces
    made hyphens (github-slugger); links count by their text, code by its content."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every #fragment a link may name in this file: its headings' slugs (a repeated one gets
    -1, -2, … as on GitHub) and explicit <a id=…> targets."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        found.update(_HTML_ID.findall(line))
        heading = _HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


@dataclass(frozen=True)
class Link:
    source: Path
    line: int
    target: str

    def __str__(self) -> str:
        return f"{shown(self.source)}:{self.line}: {self.target}"


def links(path: Path) -> list[Link]:
    """Relative links and images of a Markdown file (code blocks and code spans are not links)."""
    found: list[Link] = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        plain = _CODE_SPAN.sub("", line)
        targets = _LINK.findall(plain) + _REFERENCE.findall(plain) + _HTML_TARGET.findall(plain)
        for target in targets:
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("//"):
                continue  # http:, https:, mailto:: not this repository's
            found.append(Link(path, number, target))
    return found


def broken(link: Link) -> str | None:
    """Why a relative link does not resolve, or None when it does."""
    name, _, fragment = link.target.partition("#")
    target = (link.source.parent / name).resolve() if name else link.source
    if not target.exists():
        return "no such file"
    if fragment:
        if target.suffix != ".md":
            return "an #anchor into a file that is not Markdown"
        if fragment not in anchors(target):
            return f"no heading with the slug #{fragment} in {shown(target)}"
    return None


def env_names(name: str, field: FieldInfo) -> list[str]:
    """The environment variables that set a field, as pydantic-settings reads them: the prefix
    and the field's name, or its alias(es) without the prefix."""
    alias = field.validation_alias or field.alias
    if isinstance(alias, str):
        return [alias.upper()]
    if isinstance(alias, AliasChoices):
        return [choice.upper() for choice in alias.choices if isinstance(choice, str)]
    prefix = str(Settings.model_config.get("env_prefix", ""))
    return [(prefix + name).upper()]


def settings_table() -> dict[str, str]:
    """docs/deploy.md's settings table: each LOOP_STEPPER_* name in a row's first cell -> the
    row's default cell."""
    rows: dict[str, str] = {}
    for _, line in prose_lines(DEPLOY.read_text(encoding="utf-8")):
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) < 3:
            continue
        for name in re.findall(r"`(LOOP_STEPPER_[A-Z0-9_]+)`", cells[0]):
            rows[name] = cells[1]
    return rows


def _portable(text: str) -> str:
    """A default that depends on this machine's home, as the docs write it."""
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        text = text.replace(xdg, "~/.local/share")
    return text.replace(str(Path.home()), "~")


# Defaults computed from the machine, as the docs name them: a cell naming the expression shows
# the default when the expression gives it here (a 2-core laptop and a 64-core server alike).
MACHINE_DEFAULTS: dict[str, Callable[[], object]] = {
    "os.cpu_count()": lambda: os.cpu_count() or 1,
}


def default_shown(default: object, cell: str) -> bool:
    """Whether a documented default cell says the field's default."""
    named = [f() for expression, f in MACHINE_DEFAULTS.items() if f"`{expression}`" in cell]
    if named:
        return default in named
    if isinstance(default, bool):
        return str(default).lower() in cell.lower()
    if isinstance(default, int | float):
        numbers = re.findall(r"\d+(?:\.\d+)?", cell.replace("_", "").replace(",", ""))
        return any(float(n) == float(default) for n in numbers)
    if isinstance(default, Path):
        shown = default.relative_to(ROOT) if default.is_relative_to(ROOT) else default
        return shown.as_posix() in cell
    if isinstance(default, str):
        return "empty" in cell.lower() if default == "" else _portable(default) in cell
    return True  # another kind of default: the row itself is what is checked


# -- the settings --------------------------------------------------------------------------


def test_every_setting_has_its_row_in_deploy_md() -> None:
    table = settings_table()
    fields = Settings.model_fields
    assert len(fields) >= 20  # the model was read, not an empty stand-in
    missing = [
        f"{name} ({' or '.join(env_names(name, field))})"
        for name, field in fields.items()
        if not any(env in table for env in env_names(name, field))
    ]
    assert not missing, f"settings without a row in docs/deploy.md's table: {missing}"


def test_every_documented_default_is_the_settings_default() -> None:
    table = settings_table()
    wrong = []
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True, validated_data={})
        for env in env_names(name, field):
            if env in table and not default_shown(default, table[env]):
                wrong.append(f"{env}: default {default!r}, documented {table[env]!r}")
    assert not wrong, "\n".join(wrong)


def test_every_row_of_the_table_is_a_setting() -> None:
    known = {env for name, f in Settings.model_fields.items() for env in env_names(name, f)}
    stale = sorted(set(settings_table()) - known)
    assert not stale, f"docs/deploy.md documents settings app/settings.py does not have: {stale}"


def test_a_machine_default_is_checked_on_this_machine() -> None:
    """A cell naming `os.cpu_count()` shows a default of this machine's count, and no other."""
    cores = os.cpu_count() or 1
    assert default_shown(cores, "`os.cpu_count()`: one a core")
    assert not default_shown(cores + 1, "`os.cpu_count()`: one a core")
    assert not default_shown(cores, f"{cores + 3}")  # a number written in is not the rule


# -- the links -----------------------------------------------------------------------------


def test_every_relative_link_resolves() -> None:
    checked = [link for path in markdown_files() for link in links(path)]
    assert len(checked) > 20  # the links were found at all
    bad = [f"{link}: {why}" for link in checked if (why := broken(link))]
    assert not bad, "\n".join(bad)


def test_the_readme_links_into_every_doc() -> None:
    named = {
        (README.parent / link.target.partition("#")[0]).resolve()
        for link in links(README)
        if link.target.partition("#")[0]
    }
    docs = [p for p in markdown_files() if p != README]
    assert docs and not [p.name for p in docs if p.resolve() not in named]


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Mixed precision (`amp`)", "mixed-precision-amp"),
        ("Behind a reverse proxy (TLS, a sub-path)", "behind-a-reverse-proxy-tls-a-sub-path"),
        ("The db: SQLite or PostgreSQL", "the-db-sqlite-or-postgresql"),
        ("The rest of the real loop (issue 10)", "the-rest-of-the-real-loop-issue-10"),
        ("`zero_grad` and [the lesson](lesson.md)", "zero_grad-and-the-lesson"),
        ("Moons ÷ neuron, p50", "moons--neuron-p50"),
    ],
)
def test_slugs_are_githubs(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_the_checker_finds_a_broken_link(tmp_path: Path) -> None:
    """The link test can fail: a missing file, a missing anchor and a heading in a code block
    are found; a good link, a repeated heading's -1 and an external URL are not."""
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Twice\n\n## Twice\n", encoding="utf-8")
    page.write_text(
        "# Page\n\n```bash\n# not a heading\n```\n\n"
        "[ok](other.md#twice-1) [ok](#page) [ok](https://example.com/x.md#nowhere)\n"
        "`[not a link](nowhere.md)`\n"
        "[gone](missing.md) [no anchor](other.md#thrice) [code](#not-a-heading)\n",
        encoding="utf-8",
    )
    found = links(page)
    assert [link.target for link in found] == [
        "other.md#twice-1",
        "#page",
        "missing.md",
        "other.md#thrice",
        "#not-a-heading",
    ]
    assert [broken(link) is None for link in found] == [True, True, False, False, False]


# -- the README ----------------------------------------------------------------------------


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_the_readme_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"^```[a-z]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert block, "README.md has no fenced code block"
    commands = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    assert tuple(commands[:2]) == SACRED


def test_the_images_are_small() -> None:
    images = [
        (link.source.parent / link.target).resolve()
        for path in markdown_files()
        for link in links(path)
        if link.target.lower().endswith((".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"))
    ]
    assert images, "README.md shows a screenshot"
    big = [f"{p.name}: {p.stat().st_size} bytes" for p in images if p.stat().st_size >= 200_000]
    assert not big, big
