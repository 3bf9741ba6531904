"""CSV datasets (issue 28): upload a file, read its summary back. The file is read by
``app/spec/tables.py`` and kept by the db (``app/db/datasets.py``) under its SHA-256; a session
names it by that id. The contract: docs/api.md#datasets.

The body is the file itself (``text/csv``), not JSON, so it has its own limit: the security
middleware takes up to ``LOOP_STEPPER_DATASET_MAX_BYTES`` on this path (``body_limits``) where
every other body is held to ``LOOP_STEPPER_MAX_BODY``, and answers a larger one 413 in a
dataset's words before the route ever runs. Reading a file (up to 0.3 s for 1 MB of one-digit
cells) and writing it go through the heavy-work pool: a click never waits behind an upload.
"""

from __future__ import annotations

import re
import sys
from typing import TypedDict

from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import BaseModel, Field

from app.db import Database
from app.settings import Settings
from app.spec.tables import ColumnJson, TableSummary, dataset_id, parse_csv
from app.web.answers import Problem
from app.web.deps import as_json
from app.web.pool import HeavyPool
from app.web.security import BodyLimit

router = APIRouter(prefix="/api", tags=["datasets"])
PATH = "/api/datasets"  # the upload's path, for its body limit
MEDIA = "text/csv"
ID = re.compile(r"[0-9a-f]{64}")


class ColumnOut(BaseModel):
    name: str = Field(description="as the header row names it, spaces around it dropped")
    numeric: bool = Field(description="every value a finite decimal number (3, -0.5, 1e-3)")
    distinct: int = Field(description="different values in it (numbers compared as numbers)")


class DatasetOut(BaseModel):
    id: str = Field(
        description="the SHA-256 of the file's bytes, in hex: the same file, the same id"
    )
    rows: int = Field(description="rows of values (the header not counted)")
    columns: list[ColumnOut] = Field(description="in the file's order")


def body_limits(settings: Settings) -> dict[str, BodyLimit]:
    """The upload's own body limit, for ``security.install``."""
    words = "a CSV dataset is at most %d bytes (LOOP_STEPPER_DATASET_MAX_BYTES)"
    return {PATH: (settings.dataset_max_bytes, words)}


@router.post(
    "/datasets",
    status_code=201,
    response_model=DatasetOut,
    responses={
        413: {"model": Problem, "description": "the file is over LOOP_STEPPER_DATASET_MAX_BYTES"},
        415: {"model": Problem, "description": "the body is not sent as text/csv"},
        422: {"description": "the file refused: detail[0].loc is ['body', row, column]"},
        503: {"model": Problem, "description": "heavy work is queued past its bound: Retry-After"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {MEDIA: {"schema": {"type": "string", "description": "the CSV file"}}},
        }
    },
)
async def upload_dataset(request: Request) -> Response:
    """Keep a CSV file (a header row, then values) as a dataset; answer its summary. The
    same file again is the same dataset (201 again, nothing written twice); a refused file
    is not kept."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != MEDIA:
        raise HTTPException(415, f"a dataset is sent as {MEDIA} (the file's bytes), not {media!r}")
    settings: Settings = request.app.state.settings
    body = await request.body()
    if len(body) > settings.dataset_max_bytes:  # the middleware's limit, should it be missing
        raise HTTPException(413, f"a CSV dataset is at most {settings.dataset_max_bytes} bytes")
    pool: HeavyPool = request.app.state.pool
    db: Database = request.app.state.sessions.db
    summary = await pool.run(keep, db, body, settings)
    return as_json(summary, status=201)


@router.get(
    "/datasets/{dataset_id}",
    response_model=DatasetOut,
    responses={
        404: {"model": Problem, "description": "no such dataset"},
        503: {"model": Problem, "description": "heavy work is queued past its bound: Retry-After"},
    },
)
async def dataset_summary(dataset_id: str, request: Request) -> Response:
    """A dataset's summary, as its upload answered it."""
    if not ID.fullmatch(dataset_id):
        raise HTTPException(404, "no such dataset")
    pool: HeavyPool = request.app.state.pool
    db: Database = request.app.state.sessions.db
    summary = await pool.run(summarize, db, dataset_id)
    if summary is None:
        raise HTTPException(404, "no such dataset")
    return as_json(summary)


class DatasetJson(TypedDict):
    id: str
    rows: int
    columns: list[ColumnJson]


def keep(db: Database, body: bytes, settings: Settings) -> DatasetJson:
    """Read the file whole (a ``CsvError`` refuses it, and nothing is written), then keep it."""
    table = parse_csv(
        body, max_rows=settings.dataset_max_rows, max_columns=settings.dataset_max_columns
    )
    key = dataset_id(body)
    db.save_dataset(key, body, table.rows)
    return _answer(key, table.summary())


def summarize(db: Database, key: str) -> DatasetJson | None:
    body = db.dataset(key)
    if body is None:
        return None
    # read with no limits: it passed those in force when it came, and lower ones since must
    # not make a kept dataset unreadable
    table = parse_csv(body, max_rows=sys.maxsize, max_columns=sys.maxsize)
    return _answer(key, table.summary())


def _answer(key: str, summary: TableSummary) -> DatasetJson:
    return {"id": key, "rows": summary["rows"], "columns": summary["columns"]}


@router.get(
    "/datasets/{dataset_id}/file",
    response_class=Response,
    responses={404: {"model": Problem, "description": "no such dataset"}},
)
async def dataset_file(dataset_id: str, request: Request) -> Response:
    """The file as it was uploaded (an export past 200 KB of CSV reads it beside the script)."""
    if not ID.fullmatch(dataset_id):
        raise HTTPException(404, "no such dataset")
    pool: HeavyPool = request.app.state.pool
    db: Database = request.app.state.sessions.db
    body = await pool.run(db.dataset, dataset_id)
    if body is None:
        raise HTTPException(404, "no such dataset")
    disposition = f'attachment; filename="{dataset_id}.csv"'
    return Response(body, media_type="text/csv", headers={"Content-Disposition": disposition})
