"""Predict first and Explain a number (issue 17): routes that delegate to predict/predictions.py and
app/predict/explanations.py, and the shapes of their answers."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, Field

from app.lessons import walk
from app.log.timeline import Timeline
from app.predict import explanations, predictions
from app.web.answers import ChoiceOut, QuestionOut, SessionOut
from app.web.deps import ERRORS, Call, Target
from app.web.schemas import Body, Entry, Number

router = APIRouter(prefix="/api")


class PredictBody(Body):
    choice: str | list[str] = Field(description="one id, or a list of ids when multiple")


class RevealedChoice(ChoiceOut):
    misconception: str | None = Field(description="null for a true choice")


class LineErrorOut(BaseModel):
    detail: str = Field(description="what POST …/next answers with its 409")
    line: Entry | None = None


class PredictOut(BaseModel):
    correct: bool
    answer: list[str] = Field(description="the true ids")
    explanation: str
    choices: list[RevealedChoice]
    session: SessionOut | None = Field(description="as POST …/next answers; null if it raised")
    error: LineErrorOut | None = Field(description="the line raised: its 409's body")


class Tally(BaseModel):
    asked: int
    correct: int


class ScoreOut(Tally):
    by_line: dict[str, Tally]
    by_kind: dict[str, Tally]


class Example(BaseModel):
    i: int = Field(description="the example's position in its batch")
    contribution: Number


class PartOut(BaseModel):
    op: Literal["add", "scale"]
    moment: int
    line: Entry
    iteration: int
    value: Number | None = Field(None, description="add: what this backward added")
    factor: Number | None = Field(None, description="scale: what .grad was multiplied by")
    examples: list[Example]


class ExplainOut(BaseModel):
    param: str
    index: int
    value: Number
    parts: list[PartOut]
    examples_sum_error: Number | None


@router.get("/sessions/{session_id}/question", response_model=QuestionOut, responses=ERRORS)
async def question(target: Target) -> Response:
    """What the line at the cursor will do, asked before it runs; changes nothing."""
    sid = target.session_id
    return await target.use(lambda t: predictions.question(t, sid).public(), heavy=True)


@router.post("/sessions/{session_id}/predict", response_model=PredictOut, responses=ERRORS)
async def predict(call: Call, body: PredictBody, request: Request) -> Response:
    """Keep the prediction, then run the line exactly as POST …/next does."""
    scored: predictions.Scored | None = request.app.state.scored  # LTI's grades, when on
    lti = request.app.state.lti
    db = call.sessions.db

    def act(timeline: Timeline) -> dict[str, Any]:
        on_lesson = timeline.setup.lesson is not None  # graded by the lesson's questions
        asked = walk.asks_auto(timeline)
        answer = predictions.predict(
            timeline, call.session_id, body.choice, None if on_lesson else scored
        )
        if asked and lti is not None:  # the prediction counts once its line has run
            answers = db.lesson_answers(call.session_id)
            walk.grade(timeline, call.session_id, answers, lti.grades.scored)
        return {**answer, "session": None if answer["error"] else call.session(timeline)}

    return await call.use(act, heavy=True)


@router.get("/sessions/{session_id}/score", response_model=ScoreOut, responses=ERRORS)
async def score(target: Target) -> Response:
    return await target.use(predictions.score)


@router.get("/sessions/{session_id}/explain", response_model=ExplainOut, responses=ERRORS)
async def explain(
    target: Target,
    param: Annotated[str, Query(max_length=100)],
    index: Annotated[int, Query(ge=0, le=2**31)],
) -> Response:
    """One element of ``param.grad`` as the parts that made it, each split into examples."""
    return await target.use(lambda t: explanations.explain(t, param, index), heavy=True)
