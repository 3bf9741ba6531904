"""Prepared lessons (issue 29): write one, read it, check its claims, walk it. The contract:
docs/api.md#lessons. The document is checked by ``app/engine/lessons.py`` (every error with its
JSON pointer) and its setup as a ``POST /api/sessions`` body; the walk is ``app/lessons/``."""

from __future__ import annotations

import contextlib
import json
import re
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Request, Response
from pydantic import ValidationError
from starlette.convertors import StringConvertor, register_url_convertor

from app.engine import lessons as documents
from app.engine.lessons import LessonRefused
from app.lectures.quizzes import LectureConflict
from app.lessons import library, walk
from app.lessons.draft import draft as draft_of
from app.log.timeline import Timeline, TimelineError
from app.sessions.copies import Copies
from app.web.answers import Problem, SessionOut
from app.web.deps import ERRORS, Call, Hub, Sessions, as_json, created
from app.web.pool import HeavyPool
from app.web.schemas import CreateSession
from app.web.setups import body_of, lesson_setup


class LessonId(StringConvertor):
    """A lesson's id in a path: never ``schema`` or ``check`` (their own routes), so
    ``/api/lessons/schema`` is not also a lesson's path (its ``Allow`` would list a lesson's
    methods)."""

    regex = "(?!(?:schema|check)$)[^/]+"


register_url_convertor("lesson", LessonId())
# in the OpenAPI schema: never ``check`` (a request that sends it anyway is on POST
# /api/lessons/check's path, which answers 405; ``schema``'s GET is the lessons' JSON Schema)
Lesson = Annotated[str, Path(json_schema_extra={"not": {"enum": ["check"]}})]
NOT_A_LESSON: dict[int | str, dict[str, Any]] = {
    405: {"model": Problem, "description": "the id is `check` or `schema`: another route's path"}
}
router = APIRouter(prefix="/api", tags=["lessons"])
MAX_DOCUMENT = 256 * 1024  # bytes of a lesson document (also its body limit)
# the bodies that hold a document (a lesson's PUT: every path under /api/lessons/)
PATHS = ("/api/lessons", "/api/lessons/")


def _pointer(loc: tuple[int | str, ...]) -> str:
    return "".join(f"/{part}" for part in loc)


async def document(request: Request) -> dict[str, Any]:
    """The request's lesson document, checked whole: ``LessonRefused`` with every problem."""
    body = await request.body()
    if len(body) > MAX_DOCUMENT:
        raise LessonRefused([{"pointer": "", "msg": f"a lesson is at most {MAX_DOCUMENT} bytes"}])
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise LessonRefused([{"pointer": "", "msg": f"not JSON: {error}"}]) from error
    problems = documents.validate(doc)
    if isinstance(doc, dict) and isinstance(doc.get("setup"), dict):
        try:
            CreateSession.model_validate(doc["setup"])
        except ValidationError as error:
            problems += [
                {"pointer": "/setup" + _pointer(e["loc"]), "msg": e["msg"]} for e in error.errors()
            ]
    if problems:
        raise LessonRefused(problems)
    return doc  # type: ignore[no-any-return]


def gradebook(request: Request) -> walk.Graded | None:
    """Where a launched student's lesson score goes (LTI's grades), when LTI is on."""
    lti = request.app.state.lti
    return None if lti is None else lti.grades.scored


def token_of(authorization: str | None) -> str | None:
    match = re.fullmatch(r"Bearer\s+(\S+)", authorization or "")
    return match.group(1) if match else None


@router.get("/lessons/schema")
def lesson_schema() -> dict[str, Any]:
    """The lesson document's JSON Schema (``"format": "loop-stepper-lesson/1"``)."""
    return documents.SCHEMA


@router.get("/lessons")
def gallery() -> list[dict[str, Any]]:
    """The built-in lessons (id, title, summary, stops); lessons users wrote are unlisted."""
    return library.gallery()


@router.post("/lessons", status_code=201, responses={422: {"description": "every problem"}})
async def create_lesson(request: Request) -> Response:
    doc = await document(request)
    pool: HeavyPool = request.app.state.pool
    lesson_id, token = await pool.run(library.create, request.app.state.sessions.db, doc)
    url = f"{request.scope.get('root_path', '')}/?lesson={lesson_id}"
    return as_json({"id": lesson_id, "edit_token": token, "url": url}, status=201)


@router.get("/lessons/{lesson_id:lesson}", responses={404: {"model": Problem}, **NOT_A_LESSON})
async def read_lesson(lesson_id: Lesson, request: Request) -> Response:
    pool: HeavyPool = request.app.state.pool
    return as_json(await pool.run(library.get, request.app.state.sessions.db, lesson_id))


@router.put(
    "/lessons/{lesson_id:lesson}",
    responses={403: {"model": Problem}, 404: {"model": Problem}, **NOT_A_LESSON},
)
async def update_lesson(
    lesson_id: Lesson, request: Request, authorization: Annotated[str | None, Header()] = None
) -> Response:
    doc = await document(request)
    pool: HeavyPool = request.app.state.pool
    db = request.app.state.sessions.db
    await pool.run(library.update, db, lesson_id, token_of(authorization), doc)
    return as_json(doc)


@router.delete(
    "/lessons/{lesson_id:lesson}",
    status_code=204,
    responses={403: {"model": Problem}, 404: {"model": Problem}, **NOT_A_LESSON},
)
async def delete_lesson(
    lesson_id: Lesson, request: Request, authorization: Annotated[str | None, Header()] = None
) -> Response:
    pool: HeavyPool = request.app.state.pool
    db = request.app.state.sessions.db
    await pool.run(library.delete, db, lesson_id, token_of(authorization))
    return Response(status_code=204)


@router.get(
    "/lessons/{lesson_id:lesson}/file", response_class=Response, responses={404: {"model": Problem}}
)
async def lesson_file(lesson_id: Lesson, request: Request) -> Response:
    """The document as a download, ``<title>.lesson.json``."""
    pool: HeavyPool = request.app.state.pool
    doc = await pool.run(library.get, request.app.state.sessions.db, lesson_id)
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", doc["title"]).strip("-")[:80] or "lesson"
    body = json.dumps(doc, ensure_ascii=False, indent=2).encode()
    disposition = f'attachment; filename="{name}.lesson.json"'
    return Response(
        body, media_type="application/json", headers={"Content-Disposition": disposition}
    )


@router.post("/lessons/check", responses={422: {"description": "every problem"}})
async def check_lesson(request: Request) -> Response:
    """Every stop's claims on a fresh session of the lesson (kept only while checking)."""
    doc = await document(request)
    pool: HeavyPool = request.app.state.pool
    copies: Copies = request.app.state.copies
    sessions = request.app.state.sessions

    def run() -> list[dict[str, Any]]:
        session = copies.create(lesson_setup("check", doc, request.app.state.settings, sessions.db))
        try:
            return sessions.act(session, lambda t: walk.check(t, doc))  # type: ignore[no-any-return]
        finally:
            sessions.delete(session.id)

    return as_json({"stops": await pool.run(run)})


@router.post(
    "/lessons/{lesson_id:lesson}/sessions",
    status_code=201,
    response_model=SessionOut,
    responses=ERRORS,
)
async def lesson_session(lesson_id: str, sessions: Sessions, request: Request) -> Response:
    """A session on the lesson's setup that carries ``lesson`` (its stops, the stop here)."""
    pool: HeavyPool = request.app.state.pool
    copies: Copies = request.app.state.copies
    doc = await pool.run(library.get, sessions.db, lesson_id)
    session = await pool.run(
        copies.create, lesson_setup(lesson_id, doc, request.app.state.settings, sessions.db)
    )
    return created(sessions, session)


@router.post("/sessions/{session_id}/lesson/next-stop", response_model=SessionOut, responses=ERRORS)
async def next_stop(call: Call, hub: Hub) -> Response:
    """The lines up to the lesson's next stop (its change applied there); 409 past the last.
    In a lecture, a stop with ``vote`` puts its question to the class by itself (the class
    predicts: a poll is already open, or a quiz, and it stays as it is)."""
    answer = await call.act(walk.next_stop, heavy=True)
    lecture = hub.of_session(call.session_id)
    if lecture is not None:

        def vote(timeline: Timeline) -> None:
            walk_ = timeline.setup.lesson or {"stops": []}
            here = [s for s in walk_["stops"] if s["at"] == timeline.moment]
            if here and here[0].get("vote"):
                with contextlib.suppress(LectureConflict):
                    hub.polls.ask(lecture, timeline)

        await call.take(vote, heavy=True)
    return answer


@router.post("/sessions/{session_id}/lesson/answer", responses=ERRORS)
async def answer(call: Call, request: Request) -> Response:
    """A custom question's answer: ``{"stop": i, "choices": [ids]}`` -> right or not, each
    chosen choice's feedback, the score so far."""
    try:
        body = json.loads(await request.body())
        stop_index, chosen = int(body["stop"]), [str(c) for c in body["choices"]]
    except (ValueError, KeyError, TypeError) as error:
        raise LessonRefused(
            [{"pointer": "", "msg": 'send {"stop": index, "choices": [ids]}'}]
        ) from error
    db = call.sessions.db
    graded = gradebook(request)

    def judge(timeline: Timeline) -> dict[str, Any]:
        walk_ = timeline.setup.lesson
        if walk_ is None:
            raise TimelineError("this session is not on a lesson")
        stops = walk_["stops"]
        if not 0 <= stop_index < len(stops) or not isinstance(
            stops[stop_index].get("question"), dict
        ):
            raise TimelineError(f"stop {stop_index} asks no question with choices")
        choices = stops[stop_index]["question"]["choices"]
        right = {c["id"] for c in choices if c["correct"]}
        known = {c["id"]: c for c in choices}
        if not chosen or any(c not in known for c in chosen):
            raise TimelineError(f"choose among {', '.join(known)}")
        correct = set(chosen) == right
        db.save_lesson_answer(call.session_id, stop_index, json.dumps(chosen), correct)
        answers = db.lesson_answers(call.session_id)
        if graded is not None:
            walk.grade(timeline, call.session_id, answers, graded)
        return {
            "correct": correct,
            "feedback": {c: known[c].get("feedback") for c in chosen},
            "score": walk.lesson_score(timeline, answers),
        }

    return await call.use(judge)


@router.get("/sessions/{session_id}/lesson/score", responses=ERRORS)
async def score(call: Call) -> Response:
    """``{"asked", "answered", "correct", "by_stop"}``: custom and auto questions alike."""
    db = call.sessions.db

    def read(timeline: Timeline) -> dict[str, Any]:
        if timeline.setup.lesson is None:
            raise TimelineError("this session is not on a lesson")
        return walk.lesson_score(timeline, db.lesson_answers(call.session_id))

    return await call.use(read)


@router.get("/sessions/{session_id}/lesson/draft", responses=ERRORS)
async def draft(call: Call) -> Response:
    """Any session as the start of a lesson (the page's "Make a lesson"): ``{"lesson": a
    document with its setup and a stop for each change of lr, max_norm or program, "here":
    {"at": the moment, "expect": what the session holds now}}``."""
    return await call.use(lambda timeline: draft_of(timeline, body_of(timeline.setup)))
