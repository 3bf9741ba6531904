"""A benchmark's result as a Markdown table: what every bench/ script prints last."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = [f"| {' | '.join(head)} |", f"|{'|'.join('---' for _ in head)}|"]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    return "\n".join(lines)
