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

from app.db.sql import Cursor
from app.log.records import AT_END, Event, Saved, Setup


class NoSuchLog(KeyError):
    pass


PARSED_KEPT = 8  # logs kept parsed (one per lecture moment being forked, and a few more)
Rows = tuple[Any, list[Any], list[Any]]

_parsed: OrderedDict[Hashable, Saved] = OrderedDict()
_lock = threading.Lock()


# A log's events and keyframes: its own rows, and those of its past read from its base (a
# fork's, see LogDatabase.fork): the base's events up to ``upto`` and keyframes before it, none
# it has forgotten since (before ``first``). Parameters: (log, base, upto, first); a log with
# no base passes NULLs, which match nothing. A log's own rows are all after ``upto``.
EVENTS = (
    "SELECT seq, body FROM events WHERE log = ? UNION ALL "
    "SELECT seq, body FROM events WHERE log = ? AND seq <= ? AND seq >= ?"
)
KEYFRAMES = (
    "SELECT seq, clean, state FROM keyframes WHERE log = ? UNION ALL "
    "SELECT seq, clean, state FROM keyframes WHERE log = ? AND seq < ? AND seq >= ? - 1"
)
LOG = (
    "SELECT setup, head, first, dropped, base_points, base, upto, cuts FROM logs "
    "WHERE id = ? AND kind = ?"
)


def sources(row: Any, log_id: str) -> tuple[Any, ...]:
    """The parameters of ``EVENTS`` and ``KEYFRAMES`` for a row read with ``LOG``."""
    return (log_id, row[5], row[6], row[2])


def fetch(db: Cursor, log_id: str, kind: str) -> Rows | None:
    """A log's rows as stored (None: no such log)."""
    row = db.execute(LOG, (log_id, kind)).fetchone()
    if row is None:
        return None
    where = sources(row, log_id)
    events = db.execute(f"SELECT body FROM ({EVENTS}) AS e ORDER BY seq", where).fetchall()
    marks = db.execute(f"SELECT seq, clean FROM ({KEYFRAMES}) AS k ORDER BY seq", where).fetchall()
    return tuple(row[:5]), events, marks


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
