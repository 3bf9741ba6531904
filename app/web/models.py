"""Your own model and data (issue 28): check a spec before creating a session on it.

``POST /api/models/check`` takes a create's body and answers each layer's output shape and
parameters, or the 422 naming the layer, the field, or the CSV's row and column; nothing is
kept. The page calls it as a layer list is edited. The spec itself: docs/api.md.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from app.sessions import specs
from app.web.answers import Problem
from app.web.deps import as_json
from app.web.pool import HeavyPool
from app.web.schemas import CreateSession
from app.web.setups import spec_limits

router = APIRouter(prefix="/api", tags=["models"])
PATHS = ("/api/models/check", "/api/sessions")  # the bodies that may carry inline points


class LayerOut(BaseModel):
    index: int
    type: str
    output_shape: list[int | None] = Field(description="null: the batch's dimension")
    params: int


class PreviewOut(BaseModel):
    kind: str = Field(description="scatter (2 features), images (64: 8 x 8), else rows")
    features: list[str]
    rows: list[list[float]] = Field(description="the first training rows (as scaled)")
    targets: list[float | str] = Field(description="their targets (class names)")


class CheckOut(BaseModel):
    layers: list[LayerOut]
    params: int = Field(description="the model's parameters, in all")
    preview: PreviewOut
    input_shape: list[int | None]
    task: str
    classes: int | None = Field(description="a classification's number of classes")
    rows: dict[str, int] = Field(description="train and validation")


@router.post(
    "/models/check",
    response_model=CheckOut,
    responses={
        422: {"description": "the spec refused: detail[0].loc names the layer or the field"},
        503: {"model": Problem, "description": "heavy work is queued past its bound"},
    },
)
async def check_model(body: CreateSession, request: Request) -> Response:
    """A spec built dry, as a create would build it; nothing is kept."""
    if body.model is None:
        return as_json(
            {"detail": [{"loc": ["body", "model"], "msg": "a model to check", "type": "missing"}]},
            status=422,
        )
    pool: HeavyPool = request.app.state.pool
    seed = 0 if body.seed is None else body.seed
    db = request.app.state.sessions.db
    limits = spec_limits(request.app.state.settings)
    _, checked = await pool.run(specs.prepare, db, body.spec(), seed, limits)
    out: dict[str, Any] = dict(checked)
    return as_json(out)
