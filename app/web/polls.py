"""The class predicts (issue 18): routes that put a poll (the question about the next line) to
a lecture's class, take the followers' votes, show the instructor the counts and give the
lecture's report. The work is the hub's ``polls`` (``lectures/polls.py``); the reveal happens
in the event of the instructor's next line (any line call on the session). The URLs keep their
first words (``…/lecture/question``, ``…/predictions``)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from app.lectures.polls import REPORT_COLUMNS
from app.web.answers import Problem, QuestionOut, VoterOut
from app.web.deps import ERRORS, NOT_FOUND, QUIZ_ERRORS, Hub, Target, as_json, lecture_of
from app.web.schemas import Body, Voter

router = APIRouter(prefix="/api", tags=["lectures"])


class RoundOut(BaseModel):
    answers: int = Field(description="voters who answered in this round")
    counts: dict[str, int] = Field(description="each choice id and how many chose it")
    correct: int | None = Field(None, description="once revealed: how many were right")


class PollTallyOut(BaseModel):
    question: QuestionOut = Field(description="as GET /api/sessions/{id}/question asks it")
    round: int = Field(description="1, or 2 after Vote again")
    open: bool = Field(description="false once the instructor's next line revealed it")
    rounds: list[RoundOut]
    followers: int = Field(description="followers connected now")
    answer: list[str] | None = Field(None, description="once revealed: the true ids (its truth)")
    explanation: str | None = None


ChoiceId = Annotated[str, Field(max_length=50)]


class VoteBody(Body):
    choice: ChoiceId | Annotated[list[ChoiceId], Field(max_length=20)] = Field(
        description="one id, or a list of ids when multiple"
    )
    voter: Voter | None = None


@router.post(
    "/sessions/{session_id}/lecture/question",
    status_code=201,
    response_model=PollTallyOut,
    responses=QUIZ_ERRORS,
)
async def ask_poll(target: Target, hub: Hub) -> Response:
    """Put the question about the line at the cursor to the class (round 1); followers'
    Sessions carry it as ``prediction`` (never its truth while it is open)."""
    sid = target.session_id
    made = await target.take(lambda t: hub.polls.ask(lecture_of(hub, sid), t), heavy=True)
    return as_json(made, status=201)


@router.get(
    "/sessions/{session_id}/lecture/question", response_model=PollTallyOut, responses=QUIZ_ERRORS
)
async def poll_tally(session_id: str, hub: Hub) -> Response:
    """The instructor's live view: the question and each round's counts (no voter ids)."""
    # in a thread: with several processes the votes are counted in the database
    return as_json(
        await anyio.to_thread.run_sync(lambda: hub.polls.tally(lecture_of(hub, session_id)))
    )


@router.post(
    "/sessions/{session_id}/lecture/question/again",
    response_model=PollTallyOut,
    responses=QUIZ_ERRORS,
)
async def again(target: Target, hub: Hub) -> Response:
    """Round 2: the class votes again after discussing; round 1's votes are kept."""
    sid = target.session_id
    return await target.use(lambda t: hub.polls.again(lecture_of(hub, sid), t))


@router.post(
    "/lectures/{code}/predictions",
    response_model=VoterOut,
    responses={
        **NOT_FOUND,
        409: {"model": Problem, "description": "no prediction is open"},
        429: {"model": Problem, "description": "too many voters, or answers too fast"},
    },
)
async def vote(code: str, hub: Hub, body: VoteBody) -> Response:
    """One vote per voter per round (voting again replaces it); at most 1000 voters,
    and a voter votes at most 5 times at once, then once a second."""
    voter = await anyio.to_thread.run_sync(
        lambda: hub.polls.vote(hub.find(code), body.choice, body.voter)
    )
    return as_json({"voter": voter})


REPORT: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    200: {
        "content": {"text/csv": {}},
        "description": "one row per question asked in the lecture: " + ",".join(REPORT_COLUMNS),
    },
}


@router.get("/sessions/{session_id}/lecture/report", response_class=Response, responses=REPORT)
async def report(target: Target, hub: Hub) -> Response:
    """Every poll and quiz asked in the session's lecture (the running one, or the last one),
    with how many voted and how many were right in each round."""
    # a 404 for no such session; a lesson's stops by moment, for the report's stop column
    walk = await target.take(lambda t: t.setup.lesson)
    stops = {s["at"]: i for i, s in enumerate(walk["stops"])} if walk else None
    text = await anyio.to_thread.run_sync(hub.polls.report, target.session_id, stops)
    disposition = 'attachment; filename="lecture-report.csv"'
    return Response(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": disposition},
    )
