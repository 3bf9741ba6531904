"""The HTTP API: one endpoint per loop line. Routes only delegate to the Lab."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio.to_thread
import pydantic_core
from fastapi import APIRouter, Depends, Query, Request, Response

from .. import export
from ..engine import Toggles
from ..engine import scenarios as catalogue
from ..engine.amp import AmpSpec
from ..engine.optimizers import PLAIN_SGD, OptimizerSpec, SchedulerSpec
from ..engine.program import PRESETS, program_for
from ..quizzes import self_study_preset
from ..records import Setup
from ..sessions import Session as LiveSession
from ..sessions import SessionBusy, LiveSessions
from ..db import NotOwner
from ..timeline import Timeline, TimelineError
from .answers import Output, Problem, SessionOut
from .schemas import (
    BackwardBody,
    CreateSession,
    PatchSession,
    PresetOut,
    RewindBody,
    RunBody,
    ScenarioOut,
    SnapshotOut,
    TimelineOut,
    ZeroGradBody,
)

router = APIRouter(prefix="/api")


async def get_sessions(request: Request) -> LiveSessions:  # async: no thread hop for a lookup
    sessions: LiveSessions = request.app.state.sessions
    return sessions


Sessions = Annotated[LiveSessions, Depends(get_sessions)]
ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such session (or it expired)"},
    409: {"model": Problem, "description": "the line cannot run now; PyTorch's own message"},
    429: {"model": Problem, "description": "too many requests already wait for this session"},
}
MAX_WAITING = 4  # requests that may queue behind one session's lock


def as_json(data: Any, status: int = 200) -> Response:
    """JSON with non-finite numbers as "NaN", "Infinity", "-Infinity": JSON has no such
    numbers, and a student who makes training diverge must still get a valid answer.

    The engine builds its answers in the schema's shape (a test holds every one to the
    model), so they are serialized directly: FastAPI's validation of a returned dict would
    cost more than running the line."""
    body = pydantic_core.to_json(data, inf_nan_mode="strings")
    return Response(body, status_code=status, media_type="application/json")


@dataclass
class SessionTarget:
    """One request on one session: which, and from which database."""

    sessions: LiveSessions
    session_id: str

    async def use(self, read: Callable[[Timeline], Any], *, heavy: bool = False) -> Response:
        """Answer with what ``read`` takes from the session's Timeline, as JSON."""
        return as_json(await self.take(read, heavy=heavy))

    async def take(self, read: Callable[[Timeline], Any], *, heavy: bool = False) -> Any:
        """What ``read`` takes from the session's Timeline, alone: concurrent requests on it
        take turns. Whatever ``read`` changed is in the database before the answer goes out. The
        result is plain data made fresh under the lock (the engine never changes it
        afterwards), so it is turned into JSON after the lock is let go.

        A line on these tiny models takes less time than handing it to a worker thread, so
        it runs right here when the session is in memory and free. A ``heavy`` action (``run``),
        a session another request holds, and one that must be read back from the database go to
        a thread: the event loop never waits on a lock or a replay.
        """
        session = self.sessions.live(self.session_id)
        if session is not None and not heavy and session.lock.acquire(blocking=False):
            held = session
            try:
                if not held.gone:
                    return self.sessions.act(held, read, replay=False)
            except NotOwner:  # another process took it since: dropped, replayed in a thread
                session = None
            finally:
                held.lock.release()
        if session is not None:
            # a page waits for each answer before it asks again, so a queue this long is a flood
            if session.waiting >= MAX_WAITING:
                raise SessionBusy(self.session_id)
            session.waiting += 1  # only ever changed on the event loop's thread: no race
            try:
                return await anyio.to_thread.run_sync(self._locked, session, read)
            finally:
                session.waiting -= 1
        return await anyio.to_thread.run_sync(self._locked, None, read)

    def _locked(self, session: LiveSession | None, read: Callable[[Timeline], Any]) -> Any:
        while True:  # a session that left memory meanwhile is read back from the database
            if session is None or session.gone:
                session = self.sessions.get(self.session_id)
            with session.lock:
                if not session.gone:
                    return self.sessions.act(session, read)  # replayed if another process took it


@dataclass
class SessionCall(SessionTarget):
    """A request that answers with the Session, and how much of its history to send."""

    since: int

    async def act(self, action: Callable[[Timeline], Any], *, heavy: bool = False) -> Response:
        """Run one action on the session's Timeline and answer with the Session after it."""

        def read(timeline: Timeline) -> dict[str, Any]:
            action(timeline)
            data = {"id": self.session_id, **timeline.snapshot(self.since)}
            return self.sessions.shown(self.session_id, data)

        return await self.use(read, heavy=heavy)


# these two read the database off the app themselves: one dependency level less on every line
async def session_target(session_id: str, request: Request) -> SessionTarget:
    return SessionTarget(request.app.state.sessions, session_id)


async def session_call(
    session_id: str,
    request: Request,
    since: Annotated[
        int,
        Query(ge=0, le=2**53, description="send only the history points numbered this or later"),
    ] = 0,
) -> SessionCall:
    return SessionCall(request.app.state.sessions, session_id, since)


Target = Annotated[SessionTarget, Depends(session_target)]
Call = Annotated[SessionCall, Depends(session_call)]


@router.get("/scenarios", response_model=list[ScenarioOut])
def list_scenarios() -> list[Any]:
    return [info for info, _ in catalogue.SCENARIOS.values()]


@router.get("/presets", response_model=list[PresetOut])
def list_presets() -> list[Any]:
    """Loop programs with a bug in them, each explained in the lesson's terms."""
    return [
        {
            "name": p.name,
            "title": p.title,
            "program": list(p.program),
            "explanation": p.explanation,
            "setup": dict(p.setup),
        }
        for p in PRESETS
    ]


def optimizer_spec(body: CreateSession) -> OptimizerSpec:
    opt = body.optimizer
    if opt is None:
        return PLAIN_SGD
    if opt.kind == "adam":
        return OptimizerSpec(
            "adam", weight_decay=opt.weight_decay, betas=(opt.betas[0], opt.betas[1])
        )
    return OptimizerSpec("sgd", momentum=opt.momentum, weight_decay=opt.weight_decay)


def scenario_options(body: CreateSession) -> dict[str, float]:
    options = {"curvature": body.curvature, "theta_star": body.theta_star}
    return {k: v for k, v in options.items() if v is not None}


@router.post(
    "/sessions",
    status_code=201,
    response_model=SessionOut,
    responses={
        404: {"model": Problem, "description": "no such snapshot"},
        503: {"model": Problem, "description": "the server is full"},
    },
)
def create_session(body: CreateSession, sessions: Sessions, request: Request) -> Response:
    quiz = self_study_preset() if body.quiz else None
    if body.snapshot is not None:
        session = sessions.from_snapshot(body.snapshot)
    else:
        info = catalogue.info(body.scenario)
        toggles = Toggles(body.skip_zero_grad, body.step_first)
        scaler = body.amp == "float16" and body.grad_scaler is not False
        default = program_for(toggles, body.accumulate, scaler)
        program = quiz.program if quiz else body.program or default
        setup = Setup(
            body.scenario,
            info.default_lr if body.lr is None else body.lr,
            info.default_seed if body.seed is None else body.seed,
            optimizer_spec(body),
            body.accumulate,
            scenario_options(body),
            tuple(program),
            body.max_norm,
            None if body.scheduler is None else SchedulerSpec.read(body.scheduler.model_dump()),
            body.dropout,
            body.batchnorm,
            body.softmax_before_loss,
            body.dtype,
            None if body.amp is None else AmpSpec(body.amp, body.grad_scaler is not False),
        )
        session = sessions.create(setup)
    if quiz is not None:
        request.app.state.hub.study.start(session.id, quiz.name)
    data = sessions.shown(session.id, {"id": session.id, **session.timeline.snapshot()})
    return as_json(data, status=201)


@router.get("/sessions/{session_id}", response_model=SessionOut, responses=ERRORS)
async def get_session(call: Call) -> Response:
    return await call.act(lambda timeline: None)


@router.patch("/sessions/{session_id}", response_model=SessionOut, responses=ERRORS)
async def patch_session(call: Call, body: PatchSession) -> Response:
    """Change lr, max_norm, the toggles (which rewrite the program) or the program itself."""
    skip, first = body.skip_zero_grad, body.step_first
    toggled = skip is not None or first is not None

    def change(timeline: Timeline) -> None:
        if body.lr is not None:
            timeline.set_lr(body.lr)
        if body.max_norm is not None:
            timeline.set_max_norm(body.max_norm)
        if body.program is not None:
            timeline.set_program(list(body.program))
        elif toggled:
            now = timeline.lab.toggles
            toggles = Toggles(
                now.skip_zero_grad if skip is None else skip,
                now.step_first if first is None else first,
            )
            lab = timeline.lab
            timeline.set_program(program_for(toggles, lab.accumulate, lab.setting.grad_scaler))

    return await call.act(change)


@router.delete("/sessions/{session_id}", status_code=204, responses=ERRORS)
def delete_session(session_id: str, sessions: Sessions, request: Request) -> Response:
    sessions.delete(session_id)
    hub = request.app.state.hub
    if hub.of_session(session_id) is not None:  # its lecture ends with it: followers get `end`
        hub.end(session_id)
    return Response(status_code=204)


@router.get("/sessions/{session_id}/output", response_model=Output, responses=ERRORS)
async def output(target: Target, size: Annotated[int, Query(ge=2, le=80)] = 30) -> Response:
    """What the model computes now (the line, or the decision boundary); changes nothing."""
    return await target.use(lambda timeline: timeline.lab.output(size))


@router.post("/sessions/{session_id}/forward", response_model=SessionOut, responses=ERRORS)
async def forward(call: Call) -> Response:
    return await call.act(lambda timeline: timeline.line("forward"))


@router.post("/sessions/{session_id}/loss", response_model=SessionOut, responses=ERRORS)
async def loss(call: Call) -> Response:
    return await call.act(lambda timeline: timeline.line("loss"))


@router.post("/sessions/{session_id}/zero_grad", response_model=SessionOut, responses=ERRORS)
async def zero_grad(call: Call, body: ZeroGradBody | None = None) -> Response:
    entry = "zero_grad" if body is None or body.set_to_none else "zero_grad(set_to_none=False)"
    return await call.act(lambda timeline: timeline.line(entry))


@router.post("/sessions/{session_id}/backward", response_model=SessionOut, responses=ERRORS)
async def backward(call: Call, body: BackwardBody | None = None) -> Response:
    entry = "backward(retain_graph=True)" if body and body.retain_graph else "backward"
    return await call.act(lambda timeline: timeline.line(entry))


@router.post("/sessions/{session_id}/step", response_model=SessionOut, responses=ERRORS)
async def step(call: Call) -> Response:
    return await call.act(lambda timeline: timeline.line("step"))


@router.post("/sessions/{session_id}/next", response_model=SessionOut, responses=ERRORS)
async def next_line(call: Call) -> Response:
    return await call.act(Timeline.next)


@router.post("/sessions/{session_id}/run", response_model=SessionOut, responses=ERRORS)
async def run(call: Call, body: RunBody) -> Response:
    return await call.act(lambda timeline: timeline.run(body.iterations), heavy=True)


@router.post("/sessions/{session_id}/reset", response_model=SessionOut, responses=ERRORS)
async def reset(call: Call) -> Response:
    return await call.act(Timeline.reset)


# -- the timeline: step back, scrub, share ------------------------------------------

REWIND_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    409: {"model": Problem, "description": "back at moment 0: there is nothing before it"},
}


@router.post("/sessions/{session_id}/rewind", response_model=SessionOut, responses=ERRORS)
async def rewind(call: Call, body: RewindBody) -> Response:
    """The Session exactly as it was answered right after line ``to`` (0: the start)."""
    return await call.act(lambda timeline: timeline.rewind(body.to))


@router.post("/sessions/{session_id}/back", response_model=SessionOut, responses=REWIND_ERRORS)
async def back(call: Call) -> Response:
    """One moment back: the Session as it was answered after the line before."""
    return await call.act(Timeline.back)


@router.get("/sessions/{session_id}/timeline", response_model=TimelineOut, responses=ERRORS)
async def timeline(target: Target) -> Response:
    """Every moment that can be rewound to, for a slider."""
    return await target.use(lambda t: {"moment": t.moment, "moments": t.summary()})


@router.post(
    "/sessions/{session_id}/snapshot", status_code=201, response_model=SnapshotOut, responses=ERRORS
)
async def snapshot(target: Target, request: Request) -> Response:
    """A frozen copy of this session's log up to now, to open as a new session elsewhere."""
    sessions = target.sessions

    def take(timeline: Timeline) -> dict[str, str]:
        token = sessions.snapshot(target.session_id)  # the log is saved up to now: copy it
        root = request.scope.get("root_path", "")
        return {"snapshot": token, "url": f"{root}/?snapshot={token}"}

    response = await target.use(take, heavy=True)
    response.status_code = 201
    return response


SCRIPT_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    200: {
        "content": {"text/x-python": {}, "application/x-ipynb+json": {}},
        "description": "the script, or the notebook with ?format=ipynb",
    },
}


@router.get("/sessions/{session_id}/script", response_class=Response, responses=SCRIPT_RESPONSES)
async def script(target: Target, format: Literal["py", "ipynb"] = "py") -> Response:
    """This session up to its current moment as plain PyTorch: a standalone script (torch, plus
    scikit-learn for moons) that runs the same lines and prints the same numbers as JSON."""

    def log(timeline: Timeline) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        setup, events = timeline.log()
        return setup.to_json(), [e.to_json() for e in events]

    setup, events = await target.take(log, heavy=True)  # copied under the session's lock
    try:
        if format == "ipynb":
            body = json.dumps(await anyio.to_thread.run_sync(export.notebook, setup, events))
            media, name = "application/x-ipynb+json", "loop_stepper.ipynb"
        else:
            body = await anyio.to_thread.run_sync(export.script, setup, events)
            media, name = "text/x-python; charset=utf-8", "loop_stepper.py"
    except export.Unsupported as error:
        raise TimelineError(str(error)) from error
    disposition = f'attachment; filename="{name}"'
    return Response(body, media_type=media, headers={"Content-Disposition": disposition})
