"""The application: settings, the live sessions, routes and error handlers (``web/errors.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Callable

import anyio.to_thread
import torch
from fastapi import FastAPI
from fastapi.templating import Jinja2Templates

from app.db import Database, DatabaseUnavailable, open_database
from app.engine import Lab, scenarios
from app.engine.optimizers import PLAIN_SGD
from app.lectures.broadcast import Alone
from app.lectures.hub import LectureHub
from app.lectures.relay import Relay
from app.log.records import Setup
from app.lti import Lti
from app.sessions.copies import Copies
from app.sessions.live import Hooks, LiveSessions
from app.settings import Settings
from app.web import (
    api,
    compression,
    diagnoses,
    docs,
    errors,
    lectures,
    lessons,
    lti,
    models,
    pages,
    polls,
    predict,
    security,
)
from app.web.datasets import body_limits
from app.web.datasets import router as datasets_router
from app.web.lane import ClickLane
from app.web.pool import HeavyPool, LightFirst
from app.web.timing import ServerTiming


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    torch.set_num_threads(settings.torch_threads)
    db = database_for(settings)
    shared = db.shared()

    def forget(session_id: str) -> None:  # called once serving: the sessions exist by then
        sessions.forget(session_id)

    # the hub first: the sessions take its hooks, it needs of them only ``forget``, later
    hub = LectureHub(
        db,
        settings.lecture_hours,
        keepalive=settings.lecture_keepalive,
        # several processes on one PostgreSQL: lectures across them (else this process alone)
        broadcast=Alone if shared is None else lambda side, _: Relay(side, shared, forget),
    )
    pool = HeavyPool(settings.heavy_workers, settings.heavy_queue)
    sessions = LiveSessions(
        db,
        settings.max_sessions,
        settings.idle_timeout,
        hooks=Hooks(on_change=hub.changed, shown=hub.study.shown, on_load=hub.adopt),
        pause=pool.priority.pause,  # the keyframe writer: light work first (app/web/priority.py)
    )

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
        grades = None if app.state.lti is None else app.state.lti.grades
        if grades is not None:  # LTI's scores to their platforms, in a thread of their own
            grades.start()
        try:
            yield
        finally:
            if grades is not None:
                await anyio.to_thread.run_sync(grades.stop)
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
    app.state.copies = Copies(sessions)
    app.state.hub = hub
    app.state.pool = pool
    # LTI 1.3 (issue 30): None, and every /lti route a 404, when no platform is configured
    try:
        app.state.lti = Lti.from_settings(
            db, settings.lti_config, settings.lti_key, settings.lti_registration_key
        )
    except BaseException:  # a bad configuration stops the start: the database let go first
        sessions.close()
        raise
    # a prediction's score, told to the LTI grades' sender (off: nobody is told)
    app.state.scored = None if app.state.lti is None else app.state.lti.grades.scored
    # a CSV dataset's upload, a create or check with a spec's points and an LTI launch have
    # their own body limits
    spec_body = "a spec is at most %d bytes (LOOP_STEPPER_SPEC_MAX_BODY)"
    bodies = body_limits(settings) | lti.body_limits()
    bodies |= {path: (settings.spec_max_body, spec_body) for path in models.PATHS}
    lesson_body = "a lesson is at most %d bytes"
    bodies |= {path: (lessons.MAX_DOCUMENT, lesson_body) for path in lessons.PATHS}
    security.install(app, settings.max_body, settings.frame_ancestors, settings.served_by, bodies)
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
    app.include_router(diagnoses.router)
    app.include_router(predict.router)
    app.include_router(lectures.router)
    app.include_router(polls.router)
    app.include_router(datasets_router)
    app.include_router(models.router)
    app.include_router(lessons.router)
    app.include_router(lti.router)
    app.include_router(pages.router)
    app.include_router(docs.router)
    errors.install(app)
    return app


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
    which the event loop must never wait for. A database lost or full skips a turn: the job
    runs again at the next (an ended task would need a restart)."""
    while True:
        await asyncio.sleep(interval)
        try:
            await anyio.to_thread.run_sync(job)
        except DatabaseUnavailable as error:
            logging.getLogger(__name__).warning("%s skipped a turn: %s", job.__name__, error)
