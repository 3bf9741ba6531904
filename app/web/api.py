"""The HTTP API: one endpoint per loop line. Routes only delegate to the Lab."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import anyio.to_thread
import torch
from fastapi import APIRouter, Query, Request, Response

from app import export
from app.engine import Toggles
from app.engine.program import program_for
from app.engine.setup import SetupJson
from app.lectures.quizzes import self_study_preset
from app.log.records import EventJson
from app.log.timeline import Timeline, TimelineError
from app.sessions.copies import Copies
from app.web.answers import Output, Problem, SessionOut, TensorPage
from app.web.catalogue import presets_out, scenarios_out
from app.web.compression import SharedAnswers
from app.web.deps import (
    ERRORS,
    HEAVY_ERRORS,
    MAX_SINCE,
    Call,
    Sessions,
    Target,
    as_json,
    created,
    warming,
)
from app.web.flights import Flights
from app.web.pool import HeavyPool
from app.web.schemas import (
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
from app.web.setups import CHECKED, setup_of, spec_setup
from loop_stepper import stores
from loop_stepper.stores.tensors import PAGE_LIMIT

router = APIRouter(prefix="/api")
NEW_ANSWERS = SharedAnswers(32)  # a new session's answer by setup (see create_session)
MAKING = Flights()  # the setups whose first session is being made


@router.get("/scenarios", response_model=list[ScenarioOut])
def list_scenarios() -> list[Any]:
    """The scenarios, each with the spec that makes it as a model of your own."""
    return scenarios_out()


@router.get("/presets", response_model=list[PresetOut])
def list_presets() -> list[Any]:
    """Loop programs with a bug in them, each explained in the lesson's terms."""
    return presets_out()


@router.post(
    "/sessions",
    status_code=201,
    response_model=SessionOut,
    responses={
        404: {"model": Problem, "description": "no such snapshot"},
        503: {"model": Problem, "description": "the server is full"},
        507: {"model": Problem, "description": "the database's disk is full"},
    },
)
async def create_session(body: CreateSession, sessions: Sessions, request: Request) -> Response:
    """A session from a setup is built from that setup's model, made once and copied (about
    0.6 ms for moons): on the event loop, as a line is, since handing it to a thread costs more
    and lets 40 threads fight the event loop for the interpreter when a class creates at once.
    A model of one's own is checked once per body (the check runs it dry) and built the first
    time in the heavy-work pool. One opened from a snapshot is a replay, and one that must
    first make room in a full database a sweep: those go to the heavy-work pool.

    A setup created before answers with its first session's answer and starts as its log
    alone, built after the answer (or by its first click): a class creating the same setup at
    once shares one answer and builds no Lab on the way."""
    pool: HeavyPool = request.app.state.pool
    copies: Copies = request.app.state.copies
    quiz = self_study_preset() if body.quiz else None
    if body.snapshot is not None:
        session = await pool.run(copies.from_snapshot, body.snapshot)
        return created(sessions, session)
    if body.model is not None:  # your own model and data: checked once per body, in the pool
        settings = request.app.state.settings
        setup = await CHECKED.setup(body, lambda: pool.run(spec_setup, body, settings, sessions.db))
    else:
        setup = setup_of(body, quiz.program if quiz else None)
    key = setup.key()
    # a setup created before: its answer is kept, and the new session is its log alone until
    # the warm-up after the answer (or its first click) builds its Lab; while its first one is
    # being made (in the pool), the class's other creations wait for it
    await MAKING.after(key)
    answer = NEW_ANSWERS.find(key)
    started = copies.start(setup) if answer is not None and quiz is None else None
    if answer is not None and started is not None:
        warm = warming(pool, copies, started)
        return answer.response(started, request.scope, status_code=201, background=warm)
    async with MAKING.flight(key):
        if body.model is None and sessions.has_room():
            session = copies.create(setup)
        else:
            session = await pool.run(copies.create, setup)
        if quiz is not None:
            request.app.state.hub.study.start(session.id, quiz.name)
            return created(sessions, session)

        # a new session's Session is the same for every session of its setup but the id: a
        # class creating at once has it encoded and gzipped once
        def first() -> bytes:
            return bytes(as_json(sessions.shown(session.id, session.timeline.view())).body)

        shared = NEW_ANSWERS.get(key, first)
    return shared.response(session.id, request.scope, status_code=201)


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
            timeline.set_program(
                program_for(toggles, lab.setup.accumulate, lab.setting.grad_scaler)
            )

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


@router.get(
    "/sessions/{session_id}/tensor",
    response_model=TensorPage,
    responses={
        **ERRORS,
        404: {"model": Problem, "description": "no such session, parameter or state tensor"},
    },
)
async def tensor(
    target: Target,
    store: Literal["params", "grad", "state"],
    name: Annotated[str, Query(max_length=200, description="a parameter's name (0.weight)")],
    key: Annotated[
        str | None, Query(max_length=50, description="store=state: exp_avg, momentum_buffer...")
    ] = None,
    start: Annotated[int, Query(ge=0, le=MAX_SINCE)] = 0,
    stop: Annotated[
        int | None, Query(ge=0, le=MAX_SINCE, description=f"at most start + {PAGE_LIMIT}")
    ] = None,
) -> Response:
    """A page of one tensor's exact elements, flattened row-major: what a summary (a tensor of
    more than 256 elements) leaves out. Reads only: the session does not change."""
    return await target.use(lambda t: stores.page(t.lab, store, name, key, start, stop))


@router.post("/sessions/{session_id}/forward", response_model=SessionOut, responses=ERRORS)
async def forward(call: Call) -> Response:
    return await call.line(lambda timeline: timeline.line("forward"), "forward")


@router.post("/sessions/{session_id}/loss", response_model=SessionOut, responses=ERRORS)
async def loss(call: Call) -> Response:
    return await call.line(lambda timeline: timeline.line("loss"), "loss")


@router.post("/sessions/{session_id}/zero_grad", response_model=SessionOut, responses=ERRORS)
async def zero_grad(call: Call, body: ZeroGradBody | None = None) -> Response:
    entry = "zero_grad" if body is None or body.set_to_none else "zero_grad(set_to_none=False)"
    return await call.line(lambda timeline: timeline.line(entry), entry)


@router.post("/sessions/{session_id}/backward", response_model=SessionOut, responses=ERRORS)
async def backward(call: Call, body: BackwardBody | None = None) -> Response:
    entry = "backward(retain_graph=True)" if body and body.retain_graph else "backward"
    return await call.line(lambda timeline: timeline.line(entry), entry)


@router.post("/sessions/{session_id}/step", response_model=SessionOut, responses=ERRORS)
async def step(call: Call) -> Response:
    return await call.line(lambda timeline: timeline.line("step"), "step")


@router.post("/sessions/{session_id}/next", response_model=SessionOut, responses=ERRORS)
async def next_line(call: Call) -> Response:
    return await call.line(Timeline.next, "next")


@router.post("/sessions/{session_id}/run", response_model=SessionOut, responses=HEAVY_ERRORS)
async def run(call: Call, body: RunBody) -> Response:
    pause = call.pool.priority.pause  # between lines: a click is answered first
    return await call.act(lambda timeline: timeline.run(body.iterations, pause), heavy=True)


@router.post("/sessions/{session_id}/reset", response_model=SessionOut, responses=ERRORS)
async def reset(call: Call) -> Response:
    return await call.act(Timeline.reset)


# the clicks, also served by the clicks' lane (lane.py) when they come as the page sends them
CLICKS_UNDER = f"{router.prefix}/sessions/"  # then {session_id}/{name}
CLICKS = {
    "forward": forward,
    "loss": loss,
    "zero_grad": zero_grad,
    "backward": backward,
    "step": step,
    "next": next_line,
    "reset": reset,
}


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
    copies: Copies = request.app.state.copies

    def take(timeline: Timeline) -> dict[str, str]:
        token = copies.snapshot(target.session_id)  # the log is saved up to now: copy it
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

    def log(timeline: Timeline) -> tuple[SetupJson, list[EventJson]]:
        setup, events = timeline.log()
        return setup.to_json(), [e.to_json() for e in events]

    def write() -> str:
        # the thread count the session's lines ran with (this process's, set from
        # LOOP_STEPPER_TORCH_THREADS, read in the worker threads that run them): the script
        # sets the same, as parallel sums' last digits depend on it
        threads = torch.get_num_threads()
        if format == "ipynb":
            return json.dumps(export.notebook(setup, events, threads=threads))
        return export.script(setup, events, threads=threads)

    setup, events = await target.take(log, heavy=True)  # copied under the session's lock
    try:
        body = await anyio.to_thread.run_sync(write)
        if format == "ipynb":
            media, name = "application/x-ipynb+json", "loop_stepper.ipynb"
        else:
            media, name = "text/x-python; charset=utf-8", "loop_stepper.py"
    except export.Unsupported as error:
        raise TimelineError(str(error)) from error
    disposition = f'attachment; filename="{name}"'
    return Response(body, media_type=media, headers={"Content-Disposition": disposition})
