"""The errors the app answers, as one table: an exception → its status code, its ``detail``
and the headers it adds. Every answer is ``{"detail": …}`` through the one JSON encoder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.routing import Match

from app.db import DatabaseUnavailable, StorageFull
from app.engine import LineError
from app.engine.lessons import LessonRefused, refused_detail
from app.lectures.lecture import NoLecture
from app.lectures.quizzes import LectureConflict, TooManyVotes
from app.lessons.library import NoLesson, NotYours
from app.log.timeline import MomentOutOfRange, TimelineError
from app.predict.predictions import NotOffered
from app.sessions.live import ServerFull, SessionBusy, UnknownSession
from app.spec.data import SpecError
from app.spec.tables import CsvError
from app.web.deps import JSONResponse
from app.web.pool import PoolFull
from loop_stepper.stores.tensors import BadRange, UnknownTensor

BODY_PARSE_ERROR = "There was an error parsing the body"  # FastAPI's 400 for an unparsable body
STORAGE_FULL = (  # a 507: the page shows it as it is
    "the server's disk is full, so this was not saved: your session is as it was before it. "
    "Try again later (tell your instructor)"
)


@dataclass(frozen=True)
class ErrorAnswer:
    """How one exception is answered. ``more``: fields beside ``detail``."""

    status: int
    detail: Callable[[Any], Any]
    more: Callable[[Any], dict[str, Any]] | None = None
    headers: Callable[[Any], dict[str, str]] | None = None

    def response(self, exc: Exception) -> JSONResponse:
        content = {"detail": self.detail(exc), **(self.more(exc) if self.more else {})}
        headers = self.headers(exc) if self.headers else None
        return JSONResponse(content, status_code=self.status, headers=headers)


def said(detail: str) -> Callable[[Any], str]:
    """A detail that is always the same words."""
    return lambda _: detail


def value_error(loc: tuple[str, ...] | list[str], exc: Exception) -> list[dict[str, Any]]:
    """A 422's detail, in the shape of FastAPI's own validation errors."""
    return [{"loc": list(loc), "msg": str(exc), "type": "value_error"}]


def csv_refused(exc: CsvError) -> list[dict[str, Any]]:
    """A refused CSV file's 422: ``loc`` is the body, then the row and the column it names."""
    where = [part for part in (exc.row, exc.column) if part is not None]
    return [{"loc": ["body", *where], "msg": exc.message, "type": "csv"}]


def invalid(exc: RequestValidationError) -> list[dict[str, Any]]:
    # FastAPI's default echoes the input back, and a NaN there is not valid JSON
    return [{"loc": e["loc"], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]


# a subclass's row wins over its base's (Starlette looks the exception's classes up in order)
ERROR_ANSWERS: dict[type[Exception], ErrorAnswer] = {
    RequestValidationError: ErrorAnswer(422, invalid),
    UnknownSession: ErrorAnswer(404, said("no such session (it may have expired)")),
    MomentOutOfRange: ErrorAnswer(422, lambda exc: value_error(["body", "to"], exc)),
    NotOffered: ErrorAnswer(422, lambda exc: value_error(exc.loc, exc)),
    BadRange: ErrorAnswer(422, lambda exc: value_error(exc.loc, exc)),
    UnknownTensor: ErrorAnswer(404, str),
    CsvError: ErrorAnswer(422, csv_refused),
    LessonRefused: ErrorAnswer(422, refused_detail),
    NoLesson: ErrorAnswer(404, str),
    NotYours: ErrorAnswer(403, str),
    SpecError: ErrorAnswer(
        422, lambda exc: [{"loc": list(exc.loc), "msg": exc.message, "type": "spec"}]
    ),
    TimelineError: ErrorAnswer(409, str),
    LineError: ErrorAnswer(409, lambda exc: exc.message, more=lambda exc: {"line": exc.line}),
    SessionBusy: ErrorAnswer(
        429, said("this session is still busy with earlier requests; try again when they finish")
    ),
    NoLecture: ErrorAnswer(404, said("no such lecture (it may have ended)")),
    LectureConflict: ErrorAnswer(409, str),
    TooManyVotes: ErrorAnswer(429, str),
    ServerFull: ErrorAnswer(503, lambda exc: f"{exc}; try again later"),
    PoolFull: ErrorAnswer(503, str, headers=lambda exc: {"Retry-After": str(exc.retry_after)}),
    DatabaseUnavailable: ErrorAnswer(503, lambda exc: f"{exc}; try again"),
    StorageFull: ErrorAnswer(507, said(STORAGE_FULL)),
}


def install(app: FastAPI) -> None:
    """Every row of ``ERROR_ANSWERS`` as the app's handler of its exception, and Starlette's
    own HTTP errors answered the same way."""
    for kind, answer in ERROR_ANSWERS.items():
        app.add_exception_handler(kind, handler(answer))

    @app.exception_handler(HTTPException)
    def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == BODY_PARSE_ERROR:
            # JSON that is not UTF-8, or nested past the parser's depth: malformed JSON, a 422
            error = {"loc": ["body"], "msg": "JSON decode error", "type": "json_invalid"}
            return JSONResponse({"detail": [error]}, status_code=422)
        headers = dict(exc.headers or {})
        methods = allowed_methods(app, request) if exc.status_code == 405 else []
        if methods:  # Starlette names only the first route's methods
            headers["Allow"] = ", ".join(methods)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)


def handler(answer: ErrorAnswer) -> Callable[[Request, Exception], JSONResponse]:
    # a plain def, as each handler was: Starlette runs it in a thread
    def answered(request: Request, exc: Exception) -> JSONResponse:
        return answer.response(exc)

    return answered


def allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """Every method some route serves at this path (FastAPI makes one route per method)."""
    return [
        method
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL
            for route in app.router.routes
        )
    ]
