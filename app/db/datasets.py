"""CSV datasets (issue 28): an uploaded file's bytes, kept under their SHA-256 (``datasets``,
migration 8). The same SQL on both dialects, mixed into both databases over their ``_tx`` and
``_read``; what a file holds is read by ``app/spec/tables.py``, never here.

Content-addressed: the id is the hash of the bytes, so saving a file twice (two teachers, or
one uploading again) writes one row, and a row never changes (``ON CONFLICT DO NOTHING``).

Decision: datasets are kept, not swept with the sessions and not counted in
``LOOP_STEPPER_STORE_MAX_BYTES``. A session's log names its dataset by id and replays from it
for as long as the log lives (a snapshot 365 days), and one file serves a whole class's
sessions and their forks; a file is at most ``LOOP_STEPPER_DATASET_MAX_BYTES`` (1 MB), and only
files that parsed whole are stored. Deleting a dataset would leave the sessions built on it
unable to replay, so a store that must shed them does it by hand (docs/deploy.md#datasets).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager

from app.db.sql import Cursor


class DatasetTables:
    clock: Callable[[], float]

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Cursor]: ...

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]: ...

    def save_dataset(self, dataset_id: str, body: bytes, rows: int) -> None:
        """Keep ``body`` under ``dataset_id`` (its hash); a second save of it writes nothing."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO datasets (id, body, rows, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (dataset_id, body, rows, self.clock()),
            )

    def dataset(self, dataset_id: str) -> bytes | None:
        """The file's bytes as uploaded, or None if no such dataset."""
        with self._read() as db:
            row = db.execute("SELECT body FROM datasets WHERE id = ?", (dataset_id,)).fetchone()
        return None if row is None else bytes(row[0])
