"""A line comment that silences the doctor on one line, as a linter's does:
``# doctor: ignore[zeros]`` (one kind, or several: ``ignore[zeros, skip_zero_grad]``) or
``# doctor: ignore`` (every kind), on the line a diagnosis names. A silenced diagnosis is kept
apart (``Chart.silenced``, the report's ``"silenced"``), never counted."""

from __future__ import annotations

import linecache
import re

COMMENT = re.compile(r"#\s*doctor:\s*ignore\b(?:\[([^\]]*)\])?")


def silenced(bug: str, file: str | None, line: int | None) -> bool:
    """Whether the line ``file:line`` says ``# doctor: ignore`` for ``bug``."""
    if file is None or line is None:
        return False
    found = COMMENT.search(linecache.getline(file, line))
    if found is None:
        return False
    kinds = found.group(1)
    return kinds is None or bug in {k.strip() for k in kinds.split(",")}
