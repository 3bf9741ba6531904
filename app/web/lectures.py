"""Lecture routes: start and end a lecture, follow it (Server-Sent Events), fork it, its quiz
and the self-study quiz.

The session's own routes (``/api/sessions/{id}/…``) drive it; everything under
``/api/lectures/{code}`` only watches or votes. The work is in ``app/lectures/hub.py``. The URLs
and JSON keep their first words (``…/answers``, ``answer`` for the truth).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Header, HTTPException, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field, create_model

from app.lectures.broadcast import Live
from app.lectures.hub import LectureHub
from app.lectures.lecture import Lecture, NoLecture
from app.lectures.quizzes import LectureConflict
from app.log.timeline import Timeline
from app.sessions.copies import Copies
from app.web.answers import Problem, SessionOut, VoterOut
from app.web.compression import SharedAnswers
from app.web.deps import (
    ERRORS,
    NOT_FOUND,
    QUIZ_ERRORS,
    Hub,
    JSONResponse,
    SessionTarget,
    Target,
    as_json,
    lecture_of,
    warming,
)
from app.web.pool import HeavyPool
from app.web.schemas import Body, Voter

router = APIRouter(prefix="/api", tags=["lectures"])
# the forks of one lecture moment get one answer but the id, encoded and gzipped once
FORK_ANSWERS = SharedAnswers(8)

PresetName = Literal[
    "correct",
    "skip_zero_grad",
    "step_first",
    "zero_grad_before_step",
    "backward_twice",
    "backward_twice_retain",
    "zeros",
]


class PollRound(BaseModel):
    answers: int
    correct: int


class FollowerPoll(BaseModel):
    """The poll: the question about the instructor's next line, put to the class (issue 18)."""

    line: str
    kind: str
    prompt: str
    choices: list[dict[str, Any]] = Field(description="once revealed with each misconception")
    multiple: bool
    param: str | None = None
    index: int | None = None
    round: int
    open: bool
    answer: list[str] | None = Field(None, description="only once revealed")
    explanation: str | None = Field(None, description="only once revealed")
    rounds: list[PollRound] | None = Field(None, description="only once revealed")


# the Session without its id: the id drives a session, and followers must never see it
FollowerSession: Any = create_model(
    "FollowerSession",
    **{n: (f.annotation, f) for n, f in SessionOut.model_fields.items() if n != "id"},  # type: ignore[call-overload]
    prediction=(FollowerPoll | None, Field(None, description="the class predicts the next line")),
)


class LectureOut(BaseModel):
    code: str = Field(description="the join code: GET /api/lectures/{code} and the page /l/{code}")
    url: str = Field(description="the followers' page")


class QuizBody(Body):
    choices: list[PresetName] = Field(min_length=2, max_length=7)


class QuizTallyOut(BaseModel):
    choices: dict[str, int] = Field(description="each choice and how many answered it")
    answers: int
    followers: int = Field(description="followers connected now")
    revealed: bool
    answer: str | None
    explanation: str | None


class QuizVoteBody(Body):
    choice: str = Field(max_length=50)
    voter: Voter | None = None


class SelfVoteBody(Body):
    choice: str = Field(max_length=50)


class SelfVoteOut(BaseModel):
    correct: bool
    preset: str
    explanation: str


def watching(lecture: Lecture, request: Request) -> SessionTarget:
    return SessionTarget(request.app.state.sessions, lecture.session_id, request.app.state.pool)


def whole(hub: LectureHub, lecture: Lecture, request: Request) -> Live:
    """The whole Session as followers see it, made from the session in memory."""

    async def make() -> tuple[int, bytes]:
        made: tuple[int, bytes] = await watching(lecture, request).take(
            lambda t: hub.sync(lecture, t)
        )
        return made

    return make


def noop(_: Timeline) -> None:
    return None


# -- the instructor ------------------------------------------------------------------


@router.post(
    "/sessions/{session_id}/lecture", status_code=201, response_model=LectureOut, responses=ERRORS
)
async def start_lecture(target: Target, hub: Hub, request: Request) -> Response:
    """Let others follow this session live under a join code (the same code while it runs)."""
    lecture = await target.take(lambda t: hub.start(target.session_id, t))
    root = request.scope.get("root_path", "")
    return as_json({"code": lecture.code, "url": f"{root}/l/{lecture.code}"}, status=201)


@router.delete("/sessions/{session_id}/lecture", status_code=204, responses=ERRORS)
async def end_lecture(session_id: str, hub: Hub) -> Response:
    if hub.of_session(session_id) is None:
        raise HTTPException(404, "this session has no lecture")
    hub.end(session_id)
    return Response(status_code=204)


@router.post(
    "/sessions/{session_id}/quiz",
    status_code=201,
    response_model=QuizTallyOut,
    responses=QUIZ_ERRORS,
)
async def ask_quiz(target: Target, hub: Hub, body: QuizBody) -> Response:
    """A question: until it is revealed, followers see no program, code, preset or toggles."""

    def start(timeline: Timeline) -> dict[str, Any]:
        lecture = lecture_of(hub, target.session_id)
        hub.ask_quiz(lecture, list(body.choices), timeline)
        return hub.tally(lecture)

    return as_json(await target.take(start), status=201)


@router.get("/sessions/{session_id}/quiz", response_model=QuizTallyOut, responses=QUIZ_ERRORS)
async def quiz_tally(session_id: str, hub: Hub) -> Response:
    """The live tally (no question yet: no choices) and how many follow now."""
    # in a thread: with several processes the votes are counted in the database
    return as_json(await anyio.to_thread.run_sync(lambda: hub.tally(lecture_of(hub, session_id))))


@router.post(
    "/sessions/{session_id}/quiz/reveal", response_model=QuizTallyOut, responses=QUIZ_ERRORS
)
async def reveal_quiz(target: Target, hub: Hub) -> Response:
    """Show everyone the program and the right answer."""

    def show(timeline: Timeline) -> dict[str, Any]:
        lecture = lecture_of(hub, target.session_id)
        hub.reveal_quiz(lecture, timeline)
        return hub.tally(lecture)

    return await target.use(show)


@router.post(
    "/sessions/{session_id}/quiz/answer", response_model=SelfVoteOut, responses=QUIZ_ERRORS
)
async def self_vote(target: Target, hub: Hub, body: SelfVoteBody) -> Response:
    """Self-study: answer the session's own question; it reveals the program."""
    return await target.use(lambda _: hub.study.vote(target.session_id, body.choice))


# -- followers -----------------------------------------------------------------------


@router.get("/lectures/{code}", response_model=FollowerSession, responses=NOT_FOUND)
async def follow(code: str, hub: Hub, request: Request) -> Response:
    """The session as followers see it: no id; during a question no program."""
    lecture = hub.find(code)
    body = await hub.broadcast.current(lecture, whole(hub, lecture, request))
    if body is None:
        raise NoLecture(code)
    data = body.split(b"\ndata: ", 1)[1]
    return as_json(json.loads(data)["session"])


EVENTS: dict[int | str, dict[str, Any]] = {
    **NOT_FOUND,
    200: {
        "content": {"text/event-stream": {}},
        "description": "`session` events {since, session}: keep the history points numbered "
        "below `since`, add the new ones; `end` when the lecture ends",
    },
}


@router.get("/lectures/{code}/events", response_class=StreamingResponse, responses=EVENTS)
async def events(
    code: str,
    hub: Hub,
    request: Request,
    last_event_id: Annotated[str | None, Header()] = None,
    changes: Annotated[
        bool,
        Query(
            description="each event's session leaves out the stores equal to the event "
            "before's and names them in unchanged (the first, and any after falling behind, "
            "is whole)"
        ),
    ] = False,
) -> StreamingResponse:
    """Server-Sent Events: one after every change of the session. Reconnecting with
    Last-Event-ID sends what was missed (or, too far behind, the whole Session once)."""
    lecture = hub.find(code)
    last = int(last_event_id) if last_event_id and last_event_id.isdigit() else None
    if not await hub.broadcast.exists(lecture, lambda: watching(lecture, request).take(noop)):
        hub.end(lecture.session_id)  # the session was deleted: so is its lecture
        raise NoLecture(code)
    live = whole(hub, lecture, request)

    async def full() -> tuple[int, bytes]:
        return await hub.broadcast.whole(lecture, live)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # nginx: do not buffer
    return StreamingResponse(
        hub.follow(lecture, last, full, changes), media_type="text/event-stream", headers=headers
    )


@router.post(
    "/lectures/{code}/fork",
    status_code=201,
    response_model=SessionOut,
    responses={
        **NOT_FOUND,
        409: {"model": Problem, "description": "a question is open"},
        503: {"model": Problem, "description": "heavy work is queued past its bound: Retry-After"},
    },
)
async def fork(code: str, hub: Hub, request: Request) -> Response:
    """A new private session at the lecture's moment, with its past to rewind into.

    Copied from the lecture's log as the database has it (every answered action is there before
    its answer goes out), never through the instructor's session: no lock, no queue, so a class
    forking at once waits for one copy of the moment, and the instructor for nothing."""
    lecture = hub.find(code)
    if lecture.hidden or lecture.polling:
        raise LectureConflict("not during a question: try it yourself once it is revealed")
    copies: Copies = request.app.state.copies
    pool: HeavyPool = request.app.state.pool
    # the first fork of a moment copies and replays it (in the pool); the others of that
    # moment write one row and reuse its answer: on the event loop, as a line
    fork = copies.quick_fork(lecture.session_id)
    if fork is None:
        fork = await pool.run(copies.fork, lecture.session_id)
    session = fork.session
    answer = FORK_ANSWERS.get(fork.moment, lambda: bytes(JSONResponse(session).body))
    warm = warming(pool, copies, fork.id)
    return answer.response(fork.id, request.scope, status_code=201, background=warm)


@router.post(
    "/lectures/{code}/answers",
    response_model=VoterOut,
    responses={
        **NOT_FOUND,
        409: {"model": Problem, "description": "no question is open"},
        429: {"model": Problem, "description": "too many voters, or answers too fast"},
    },
)
async def vote_quiz(code: str, hub: Hub, body: QuizVoteBody) -> Response:
    """One answer per voter (answering again replaces it); at most 1000 voters a question,
    and a voter answers at most 5 times at once, then once a second."""
    lecture = hub.find(code)
    try:
        voter = hub.vote(lecture, body.choice, body.voter)
    except ValueError as exc:
        error = {"loc": ["body", "choice"], "msg": str(exc), "type": "value_error"}
        raise HTTPException(422, [error]) from None
    return as_json({"voter": voter})
