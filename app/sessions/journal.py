"""The database as a session's timeline sees it (``Journal``), and the thread that writes the
keyframes sessions took after their answers have gone out (``KeyframeWriter``)."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol

from app.db import Database, DatabaseUnavailable, NoSuchLog, NotOwner
from app.engine import LabState
from app.log.keyframes import encode
from app.log.records import Change


class Journal:
    """The database as one timeline sees it: where its older keyframes are read back from, and
    the keyframes taken but not written yet (``KeyframeWriter``), which it reads from memory."""

    def __init__(self, db: Database, session_id: str) -> None:
        self.db, self.session_id = db, session_id
        self.pending: dict[int, tuple[bool, LabState]] = {}

    def keyframe(self, seq: int) -> LabState:
        held = self.pending.get(seq)
        return held[1] if held is not None else self.db.keyframe(self.session_id, seq)

    def settle(self, change: Change) -> None:
        """Take ``change``'s keyframes out of it into ``pending``, after forgetting the pending
        ones its truncation, reset or forgetting makes stale: what is left pending is exactly
        what the database would still hold had they been written with their own action."""
        if change.rebased is not None:
            self.pending.clear()
        stale = [
            seq
            for seq in self.pending
            if (change.truncate is not None and seq >= change.truncate - 1)
            or (change.forget_before is not None and seq < change.forget_before - 1)
        ]
        for seq in stale:
            del self.pending[seq]
        for seq, clean, state in change.keyframes:
            assert isinstance(state, LabState)  # a timeline's: captured, not yet encoded
            self.pending[seq] = (clean, state)
        change.keyframes = []


class Holder(Protocol):
    """A live session, as the writer needs it (``live.LiveSession``)."""

    id: str
    owner: int
    lock: threading.Lock
    journal: Journal | None


class KeyframeWriter:
    """Encodes and writes sessions' keyframes after their answers went out, in a thread of its
    own: a keyframe only shortens replays (the events alone replay every moment), so it need
    not be in the database before the answer. Encoding one costs about as much as the line that
    took it, and a ``run`` of 150 iterations takes 75 of them.

    Consistency: a session's pending keyframes are written under the session's lock, and each
    later change first drops the pending ones it makes stale (``Journal.settle``), so the database
    never holds a keyframe its log has cut. A write checks the owner epoch: a session claimed by
    another process meanwhile loses its pending keyframes, which is harmless. A crash loses
    them too: the log then replays from an older keyframe."""

    BATCH_DELAY = 0.02  # seconds: let the answers that queued the work go out first
    CHUNK = 16  # keyframes written per hold of a session's lock (a run of 1000 takes 500)

    def __init__(self, db: Database, pause: Callable[[], None] = lambda: None) -> None:
        self.db = db
        self._queue: queue.SimpleQueue[Holder | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()
        self.pause = pause  # before each chunk: light work first (app/web/priority.py)

    def submit(self, session: Holder) -> None:
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="keyframes", daemon=True)
                self._thread.start()
        self._queue.put(session)

    def _drain(self) -> None:
        """At shutdown: everything still queued, whole."""
        while True:
            try:
                session = self._queue.get_nowait()
            except queue.Empty:
                return
            if session is not None:
                with session.lock:
                    self.write(session)

    def close(self) -> None:
        """Write what is pending, then stop."""
        with self._start:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                self._drain()
                return
            time.sleep(self.BATCH_DELAY)
            batch, stop = [first], False
            while True:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                elif all(more is not s for s in batch):
                    batch.append(more)
            for session in batch:
                self.pause()
                with session.lock:  # a few at a time: the session's next line need not wait
                    left = self.write(session, self.CHUNK)
                if left:
                    self._queue.put(session)
            if stop:
                self._drain()
                return

    def write(self, session: Holder, limit: int | None = None) -> bool:
        """Write the session's pending keyframes, the oldest ``limit`` of them (call under its
        lock); True if some are still pending."""
        journal = session.journal
        if journal is None or not journal.pending:
            return False
        seqs = sorted(journal.pending)[:limit]
        # encoded here, not in the database's transaction: that holds the database's lock, which the
        # event loop's lines wait for
        change = Change(
            keyframes=[(seq, c, encode(st)) for seq in seqs for c, st in [journal.pending[seq]]]
        )
        # claimed by another process, deleted or unreachable: its replays are longer, that is all
        with contextlib.suppress(NotOwner, NoSuchLog, DatabaseUnavailable):
            self.db.append(session.id, change, session.owner)
        for seq in seqs:
            del journal.pending[seq]
        return bool(journal.pending)
