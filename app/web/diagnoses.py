"""``GET /api/sessions/{id}/diagnoses``: the doctor over a session's own loop
(``app/sessions/diagnoses.py``), replayed from its log in a worker thread."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter
from pydantic import BaseModel

from app.log.records import Event, Setup
from app.log.timeline import Timeline
from app.sessions.diagnoses import diagnose
from app.web.deps import ERRORS, Target

router = APIRouter(prefix="/api")


class DiagnosisOut(BaseModel):
    bug: str
    file: str | None
    line: int | None
    iteration: int
    message: str
    evidence: dict[str, Any]


class DiagnosesOut(BaseModel):
    diagnoses: list[DiagnosisOut]


@router.get("/sessions/{session_id}/diagnoses", response_model=DiagnosesOut, responses=ERRORS)
async def diagnoses(target: Target) -> dict[str, Any]:
    """Each silent bug of the session's loop, at its program line (1-based) and iteration, in
    the words of its preset where it is one; ``file`` is ``"loop"``. From the log up to the
    current moment, since the last change of the program."""

    def log(timeline: Timeline) -> tuple[Setup, list[Event]]:
        return timeline.log()

    setup, events = await target.take(log, heavy=True)  # copied under the session's lock
    found = await anyio.to_thread.run_sync(diagnose, setup, events)
    return {"diagnoses": found}
