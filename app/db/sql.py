"""What both databases' SQL runs on: a DB-API cursor (sqlite3's, or psycopg's behind ``?``
placeholders), and the JSON the rows hold."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, Self


class Cursor(Protocol):
    """The part of a DB-API cursor the database uses; placeholders are ``?`` on both dialects."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Self: ...

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"))
