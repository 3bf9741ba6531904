"""A log read back: its rows fetched while the connection is held, parsed once it is let go.

A class forking one lecture reads the same log (up to the same moment) hundreds of times: the
newest few logs parsed are kept, keyed by their stored text, so each is parsed once. What is
kept is only ever read (a Timeline copies the lists it changes; events are frozen).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from ..records import AT_END, Event, Saved, Setup
from .sql import Cursor

PARSED_KEPT = 8  # logs kept parsed (one per lecture moment being forked, and a few more)
Rows = tuple[Any, list[Any], list[Any]]

_parsed: OrderedDict[Hashable, Saved] = OrderedDict()
_lock = threading.Lock()


def fetch(db: Cursor, log_id: str, kind: str) -> Rows | None:
    """A log's rows as stored (None: no such log)."""
    row = db.execute(
        "SELECT setup, head, first, dropped, base_points FROM logs WHERE id = ? AND kind = ?",
        (log_id, kind),
    ).fetchone()
    if row is None:
        return None
    events = db.execute("SELECT body FROM events WHERE log = ? ORDER BY seq", (log_id,)).fetchall()
    marks = db.execute(
        "SELECT seq, clean FROM keyframes WHERE log = ? ORDER BY seq", (log_id,)
    ).fetchall()
    return row, events, marks


def parse(rows: Rows) -> Saved:
    row, events, marks = rows
    key = (tuple(row), tuple(body for (body,) in events), tuple(map(tuple, marks)))
    with _lock:
        saved = _parsed.get(key)
        if saved is not None:
            _parsed.move_to_end(key)
            return saved
    setup, head, first, dropped, base_points = row
    saved = Saved(
        Setup.from_json(json.loads(setup)),
        AT_END if head is None else int(head),
        int(first),
        int(dropped),
        json.loads(base_points),
        [Event.from_json(json.loads(body)) for body in key[1]],
        [(int(seq), bool(clean)) for seq, clean in marks],
    )
    with _lock:
        _parsed[key] = saved
        while len(_parsed) > PARSED_KEPT:
            _parsed.popitem(last=False)
    return saved
