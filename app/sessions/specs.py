"""A spec's CSV files, read from the db before a Lab is built on them (issue 28).

The engine reads a spec's CSV from its content-addressed cache (``app/spec/data.py``
``TABLES``); whoever builds a Lab on such a spec first fills it from the db: a new session
(``prepare``), and a session replayed from its log (``tables_for``, by ``Copies`` and the live
sessions cache).
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from app.engine.setup import Setup
from app.spec.data import SpecError
from app.spec.spec import CheckJson, SpecJson, SpecLimits, check, normalize
from app.spec.tables import TABLES


class DatasetSource(Protocol):
    def dataset(self, dataset_id: str) -> bytes | None: ...


def _dataset_of(data: Any) -> str | None:
    if isinstance(data, dict) and data.get("kind") == "csv":
        name = data.get("dataset")
        return name if isinstance(name, str) else None
    return None


def load_table(db: DatasetSource, data: Any) -> None:
    """The spec's CSV file into the engine's cache (a no-op for other data, or a known file)."""
    dataset = _dataset_of(data)
    if dataset is None or TABLES.knows(dataset):
        return
    body = db.dataset(dataset) if len(dataset) == 64 else None
    if body is None:
        raise SpecError(f"no dataset {dataset[:64]!r}: upload it first", ("data", "dataset"))
    TABLES.remember(dataset, body)


def tables_for(db: DatasetSource, setup: Setup) -> None:
    if setup.spec is not None:
        load_table(db, setup.spec.get("data"))


def prepare(
    db: DatasetSource, body: dict[str, Any], seed: int, limits: SpecLimits
) -> tuple[SpecJson, CheckJson]:
    """A request's spec checked whole and built dry: its normalized form (what the log keeps)
    and the check's answer. ``SpecError`` names what is wrong."""
    load_table(db, body.get("data"))
    spec = normalize(body, seed, limits)
    return spec, check(spec, seed, limits)


def as_setup_spec(spec: SpecJson) -> dict[str, Any]:
    return cast(dict[str, Any], spec)
