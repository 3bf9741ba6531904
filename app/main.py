"""The application: settings, the live sessions, routes and error handlers."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator, Callable

import anyio.to_thread
import torch
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException
from starlette.routing import Match

from app.db import Database, DatabaseUnavailable, open_database
from app.engine import Lab, LineError, scenarios
from app.engine.optimizers import PLAIN_SGD
from app.lectures.broadcast import Alone
from app.lectures.hub import LectureHub
from app.lectures.lecture import NoLecture
from app.lectures.quizzes import LectureConflict, TooManyVotes
from app.lectures.relay import Relay
from app.log.records import Setup
from app.log.timeline import MomentOutOfRange, TimelineError
from app.predict.predictions import NotOffered
from app.sessions.live import LiveSessions, ServerFull, SessionBusy, UnknownSession
from app.settings import Settings
from app.web import api, compression, docs, lectures, pages, polls, predict, security
from app.web.deps import JSONResponse
from app.web.lane import ClickLane
from app.web.pool import HeavyPool, LightFirst, PoolFull
from app.web.timing import ServerTiming


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    torch.set_num_threads(settings.torch_threads)
    sessions = LiveSessions(database_for(settings), settings.max_sessions, settings.idle_timeout)
    shared = sessions.db.shared()
    hub = LectureHub(
        sessions.db,
        settings.lecture_hours,
        keepalive=settings.lecture_keepalive,
        # several processes on one PostgreSQL: lectures across them (else this process alone)
        broadcast=Alone if shared is None else lambda side, _: Relay(side, shared, sessions.forget),
    )
    sessions.on_change, sessions.shown, sessions.on_load = hub.changed, hub.study.shown, hub.adopt

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.threadpool
        await anyio.to_thread.run_sync(warm_up)
        hub.attach(asyncio.get_running_loop())
        # torch, numpy and scikit-learn leave a million long-lived objects that every full
        # collection would walk (pauses of 0.2-0.6 s under a classroom's load): freeze them.
        gc.collect()
        gc.freeze()
        if settings.gc_thresholds:  # fewer, shorter collections of the sessions' objects
            gc.set_threshold(*(int(g) for g in settings.gc_thresholds.split(",")))
        tasks = [
            asyncio.create_task(every(settings.evict_interval, sessions.evict_idle)),
            asyncio.create_task(every(settings.sweep_interval, sessions.sweep)),
            *hub.broadcast.tasks,
        ]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            hub.broadcast.close()
            sessions.close()  # the keyframes still pending are written, then the database closed

    app = FastAPI(
        title="Loop Stepper",
        summary="One PyTorch training iteration, line by line.",
        docs_url=None,  # served from vendored files by docs.router: no CDN, strict CSP
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.sessions = sessions
    app.state.hub = hub
    app.state.pool = pool = HeavyPool(settings.heavy_workers, settings.heavy_queue)
    sessions.keyframes.pause = pool.priority.pause  # light work first: app/web/priority.py
    security.install(app, settings.max_body, settings.frame_ancestors, settings.served_by)
    compression.install(app)
    app.add_middleware(LightFirst, priority=pool.priority)  # outside gzip
    app.add_middleware(ServerTiming)  # outermost of these: the gzip and the counting in it
    app.state.templates = Jinja2Templates(directory=settings.templates_dir)

    # first: routes are matched in order, and matching a path against the ~60 API routes
    # costs 0.25 ms, more than answering /healthz or a static file
    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:  # on the event loop: answers even when busy
        return {"status": "ok"}

    app.router.routes.append(
        ClickLane(api.CLICKS_UNDER, api.CLICKS)
    )  # second: a click skips the API's routing
    app.mount("/static", compression.CompressedStatic(directory=settings.static_dir), name="static")
    app.include_router(api.router)
    app.include_router(predict.router)
    app.include_router(lectures.router)
    app.include_router(polls.router)
    app.include_router(pages.router)
    app.include_router(docs.router)

    @app.exception_handler(RequestValidationError)
    def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's default echoes the input back, and a NaN there is not valid JSON
        errors = [{"loc": e["loc"], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

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

    @app.exception_handler(UnknownSession)
    def unknown_session(request: Request, exc: UnknownSession) -> JSONResponse:
        return JSONResponse({"detail": "no such session (it may have expired)"}, status_code=404)

    @app.exception_handler(MomentOutOfRange)
    def no_such_moment(request: Request, exc: MomentOutOfRange) -> JSONResponse:
        error = {"loc": ["body", "to"], "msg": str(exc), "type": "value_error"}
        return JSONResponse({"detail": [error]}, status_code=422)

    @app.exception_handler(NotOffered)
    def not_offered(request: Request, exc: NotOffered) -> JSONResponse:
        error = {"loc": list(exc.loc), "msg": str(exc), "type": "value_error"}
        return JSONResponse({"detail": [error]}, status_code=422)

    @app.exception_handler(TimelineError)
    def timeline_error(request: Request, exc: TimelineError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    @app.exception_handler(LineError)
    def line_error(request: Request, exc: LineError) -> JSONResponse:
        return JSONResponse({"detail": exc.message, "line": exc.line}, status_code=409)

    @app.exception_handler(SessionBusy)
    def session_busy(request: Request, exc: SessionBusy) -> JSONResponse:
        detail = "this session is still busy with earlier requests; try again when they finish"
        return JSONResponse({"detail": detail}, status_code=429)

    @app.exception_handler(NoLecture)
    def no_lecture(request: Request, exc: NoLecture) -> JSONResponse:
        return JSONResponse({"detail": "no such lecture (it may have ended)"}, status_code=404)

    @app.exception_handler(LectureConflict)
    def lecture_conflict(request: Request, exc: LectureConflict) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    @app.exception_handler(TooManyVotes)
    def too_many_votes(request: Request, exc: TooManyVotes) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=429)

    @app.exception_handler(ServerFull)
    def server_full(request: Request, exc: ServerFull) -> JSONResponse:
        return JSONResponse({"detail": f"{exc}; try again later"}, status_code=503)

    @app.exception_handler(PoolFull)
    def pool_full(request: Request, exc: PoolFull) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after)}
        return JSONResponse({"detail": str(exc)}, status_code=503, headers=headers)

    @app.exception_handler(DatabaseUnavailable)
    def database_unavailable(request: Request, exc: DatabaseUnavailable) -> JSONResponse:
        return JSONResponse({"detail": f"{exc}; try again"}, status_code=503)

    return app


BODY_PARSE_ERROR = "There was an error parsing the body"  # FastAPI's 400 for an unparsable body


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


def warm_up() -> None:
    """One Lab per scenario, one iteration, one snapshot, before the first student comes.

    The first optimizer imports ``torch._dynamo`` (over a second) and moons imports scikit-learn:
    done here, no student's first click waits for them. It also builds the default setups'
    seeded templates (``scenarios.moons_template``) that every new session copies, before
    ``gc.freeze()``: they live as long as the process.
    """
    for name, (info, _) in scenarios.SCENARIOS.items():
        lab = Lab(Setup(name, info.default_lr, info.default_seed, PLAIN_SGD))
        lab.run(1)
        lab.view()


def database_for(settings: Settings) -> Database:
    """PostgreSQL if ``database_url`` is set, else SQLite's file in ``data``."""
    path = ":memory:" if settings.data == ":memory:" else f"{settings.data}/sessions.sqlite3"
    return open_database(
        settings.database_url or path,
        retain_days=settings.retain_days,
        snapshot_days=settings.snapshot_days,
        max_logs=settings.store_max_sessions,
        max_bytes=settings.store_max_bytes,
    )


async def every(interval: float, job: Callable[[], object]) -> None:
    """Run ``job`` every ``interval`` seconds (idle sessions leave memory; the database's
    retention), not only when a new session is created. In a thread: both touch the database,
    which the event loop must never wait for."""
    while True:
        await asyncio.sleep(interval)
        await anyio.to_thread.run_sync(job)
