"""LTI 1.3 (issue 30): the LMS's login and launch, the tool's JWKS, and who launched a session.
The checks are ``app/lti/``; these routes only read the request and answer. The contract:
docs/api.md#lti-13.

LTI is off (``app.state.lti`` is None) when no platform is configured nor registered: every
route here answers 404. A refused login or launch answers an HTML page naming the failed
check (the browser is the LMS's, inside its iframe), with nothing created.
"""

from __future__ import annotations

import json
import secrets
import urllib.parse
from typing import Any

import anyio.to_thread
import pydantic
from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, Field

from app.db import StoredLaunch
from app.engine.scenarios import SCENARIOS
from app.lessons import library, walk
from app.lessons.library import NoLesson
from app.lti import Launch, Lti, Refused, deep_link, register
from app.lti.grades import QUESTIONS
from app.lti.tool import teaching
from app.sessions.copies import Copies
from app.sessions.live import UnknownSession
from app.settings import Settings
from app.web.answers import Problem
from app.web.pool import HeavyPool
from app.web.schemas import CreateSession
from app.web.security import FORM_ACTION, BodyLimit
from app.web.setups import lesson_setup, setup_of

router = APIRouter(prefix="/lti", tags=["lti"])
LAUNCH_PATH = "/lti/launch"
MAX_LAUNCH_BODY = 64 * 1024  # an id_token with its custom claims; more is refused (413)
MAX_FIELDS = 16
DEEP_LINKING = "LtiDeepLinkingRequest"
SERVED = ("LtiResourceLinkRequest", DEEP_LINKING)  # the message types a launch serves
COOKIE = "lti1p3-state-"  # + the state: one cookie a login, so two tabs launch side by side


def body_limits() -> dict[str, BodyLimit]:
    """The launch's own body limit (an id_token is larger than any JSON body), for
    ``security.install``."""
    return {LAUNCH_PATH: (MAX_LAUNCH_BODY, "an LTI launch is at most %d bytes")}


def tool(request: Request) -> Lti:
    lti: Lti | None = request.app.state.lti
    if lti is None:
        raise HTTPException(404, "LTI is not configured on this server")
    return lti


def root(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def page(
    request: Request, title: str, words: str, *, check: str = "", status: int = 200, **more: Any
) -> HTMLResponse:
    templates: Jinja2Templates = request.app.state.templates
    context = {"title": title, "words": words, "check": check, "root": root(request), **more}
    return templates.TemplateResponse(request, "lti.html", context, status_code=status)


def refused(request: Request, error: Refused) -> HTMLResponse:
    return page(
        request, "The LMS launch was refused", error.words, check=error.check, status=error.status
    )


async def form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (or the query on a GET), bounded."""
    if request.method == "GET":
        pairs = list(request.query_params.multi_items())
    else:
        body = (await request.body()).decode("utf-8", "replace")
        try:
            pairs = urllib.parse.parse_qsl(body, keep_blank_values=True, max_num_fields=MAX_FIELDS)
        except ValueError:
            raise HTTPException(400, f"a form of at most {MAX_FIELDS} fields") from None
    return {k: v for k, v in pairs}


OFF: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "LTI is not configured on this server"}
}


@router.get("/jwks", responses=OFF)
def jwks(request: Request) -> dict[str, Any]:
    """The tool's public key (RS256, with its ``kid``): what a platform verifies the tool's
    signed messages with."""
    return tool(request).jwks()


# the LMS's and its browser's, not the JSON API's: HTML pages and redirects, out of /docs
@router.api_route("/login", methods=["GET", "POST"], include_in_schema=False)
async def login(request: Request) -> Response:
    """OIDC third-party login initiation → 302 to the platform's authorization endpoint."""
    lti = tool(request)
    params = await form(request)
    # by hand: url_for would walk the click lane's route, which names no paths
    redirect_uri = str(request.base_url).rstrip("/") + LAUNCH_PATH
    try:
        done = await anyio.to_thread.run_sync(lti.login, params, redirect_uri)
    except Refused as error:
        return refused(request, error)
    if done.storage_target is None:
        answer: Response = RedirectResponse(done.url, status_code=302)
    else:  # first into the platform's storage, then on (lti-storage.js)
        storage = {
            "action": "put",
            "target": done.storage_target,
            "origin": done.platform_origin,
            "state": done.state,
            "nonce": done.nonce,
            "next": done.url,
        }
        answer = page(request, "Signing in", "Signing in through your LMS…", storage=storage)
    answer.set_cookie(
        COOKIE + done.state,
        done.state,
        max_age=600,
        path="/",
        secure=True,
        httponly=True,
        samesite="none",
    )
    return answer


@router.post("/launch", include_in_schema=False)
async def launch(request: Request) -> Response:
    """The platform's launch (``id_token``, ``state``): every check, then 303 to the session."""
    lti = tool(request)
    params = await form(request)
    token, state = params.get("id_token", ""), params.get("state", "")
    bound = request.cookies.get(COOKIE + state) if state else None
    if bound is None and "lti_storage_state" in params:  # read back by the page below
        bound = params["lti_storage_state"] or None
    elif bound is None:  # no cookie (an iframe): a page asks the platform's storage for it
        asking = await storage_page(request, lti, token, state)
        if asking is not None:
            return asking
    try:
        checked = await anyio.to_thread.run_sync(lti.launch, token, state, bound, SERVED)
        if checked.message_type == DEEP_LINKING:  # an instructor picks what to link
            answer: Response = picker(request, lti, deep_link.picking(checked))
        else:
            pool: HeavyPool = request.app.state.pool
            session_id = await pool.run(open_session, request.app.state.copies, checked)
            # a graded link (an AGS line item) opens with Predict first on: answers are points
            graded = "&predict=1" if checked.lineitem else ""
            where = f"{root(request)}/?session={session_id}{graded}"
            answer = RedirectResponse(where, status_code=303)
    except Refused as error:
        return refused(request, error)
    answer.delete_cookie(COOKIE + state, path="/", secure=True, httponly=True, samesite="none")
    return answer


async def storage_page(request: Request, lti: Lti, token: str, state: str) -> Response | None:
    """The page that reads the state back from the platform's storage and posts the launch
    again (lti-storage.js), or None when its login was offered no storage."""
    if not state or not token:
        return None
    where = await anyio.to_thread.run_sync(lti.storage_of, state, token)
    if where is None:
        return None
    target, platform_origin = where
    storage = {
        "action": "get",
        "target": target,
        "origin": platform_origin,
        "state": state,
        "nonce": "",
        "next": "",
        "id_token": token,
    }
    return page(request, "Signing in", "Signing in through your LMS…", storage=storage)


# -- deep linking -----------------------------------------------------------------------------


def picker(
    request: Request, lti: Lti, pick: deep_link.Picking, error: str = "", status: int = 200
) -> HTMLResponse:
    """The picker: a lesson (the gallery, or one's id), a scenario (its setup) or a pasted
    snapshot link, posted with the request's signed ticket to ``/lti/deep_link``."""
    templates: Jinja2Templates = request.app.state.templates
    context = {
        "root": root(request),
        "ticket": deep_link.ticket(lti.key, pick),
        "scenarios": [(name, info.title) for name, (info, _) in SCENARIOS.items()],
        "questions": QUESTIONS,
        "lessons": library.gallery(),
        "error": error,
    }
    return templates.TemplateResponse(request, "lti-picker.html", context, status_code=status)


@router.post("/deep_link", include_in_schema=False)
async def deep_link_answer(request: Request) -> Response:
    """The picker's choice → the signed ``LtiDeepLinkingResponse``, auto-posted to the
    platform's ``deep_link_return_url`` (a page whose CSP allows that one origin)."""
    lti = tool(request)
    params = await form(request)
    launch_url = str(request.base_url).rstrip("/") + LAUNCH_PATH
    db = request.app.state.sessions.db

    def questions(custom: dict[str, str]) -> int:
        """A link's line item: a lesson's own questions; a setup's or snapshot's ten."""
        if "lesson" not in custom:
            return QUESTIONS
        try:
            return walk.questions(library.get(db, custom["lesson"])["stops"])
        except NoLesson as error:
            raise ValueError(str(error)) from None

    try:
        done = deep_link.answer(lti.key, params, launch_url, questions)
    except Refused as error:
        return refused(request, error)
    except deep_link.BadChoice as error:
        return picker(request, lti, error.pick, str(error), 400)
    templates: Jinja2Templates = request.app.state.templates
    context = {"root": root(request), "action": done.pick.return_url, "jwt": done.jwt}
    answer = templates.TemplateResponse(request, "lti-return.html", context | {"item": done.item})
    answer.headers[FORM_ACTION.decode()] = deep_link.origin_of(done.pick.return_url)
    return answer


# -- dynamic registration -----------------------------------------------------------------------


@router.get("/register", include_in_schema=False)
async def register_platform(
    request: Request,
    openid_configuration: str = Query(max_length=2048),
    registration_token: str = Query("", max_length=4096),
    key: str = Query("", max_length=256),
) -> Response:
    """Dynamic registration: register with the platform, keep it, and close the platform's
    dialog (``org.imsglobal.lti.close``). Needs ``key``: LOOP_STEPPER_LTI_REGISTRATION_KEY."""
    lti = tool(request)
    if not lti.registration_key:
        raise HTTPException(404, "dynamic registration is off on this server")
    if not secrets.compare_digest(key.encode(), lti.registration_key.encode()):
        return refused(request, Refused("key", "the registration key is not this server's", 403))
    base = str(request.base_url).rstrip("/")
    try:
        issuer = await anyio.to_thread.run_sync(
            register.register, lti.db, openid_configuration, registration_token, base
        )
    except Refused as error:
        return refused(request, error)
    words = f"Loop Stepper is registered with {issuer}. This window closes by itself."
    return page(request, "Registered", words, close=True)


class MeOut(BaseModel):
    session: str
    roles: list[str] = Field(description="the launch's LTI roles, as the LMS sent them")
    teaching: bool = Field(
        description="Instructor, Administrator, TeachingAssistant or ContentDeveloper"
    )


@router.get(
    "/me",
    response_model=MeOut,
    responses={404: {"model": Problem, "description": "LTI off, or no launch made it"}},
)
def me(request: Request, session: str = Query(min_length=1, max_length=64)) -> JSONResponse:
    """Who launched ``session`` from an LMS: their roles, and whether they teach (the page's
    instructor view). The session id is the capability, as for every session route."""
    lti = tool(request)
    found = lti.db.lti_launch_of(session)
    if found is None:
        raise HTTPException(404, "no LTI launch made this session")
    return JSONResponse(
        {"session": session, "roles": list(found.roles), "teaching": teaching(found.roles)}
    )


# -- what a launch opens ---------------------------------------------------------------------


def open_session(copies: Copies, launch: Launch) -> str:
    """The session of ``launch``'s user on its resource link: theirs from before if it still
    exists, else a new one from the link's custom parameter; kept with the launch."""
    db = copies.db
    before = db.lti_launch(launch.issuer, launch.deployment, launch.link, launch.sub)
    if before is not None and db.exists(before.session):
        session_id = before.session
    else:
        session_id = new_session(copies, launch.custom)
    db.save_lti_launch(
        StoredLaunch(
            launch.issuer,
            launch.deployment,
            launch.link,
            launch.sub,
            launch.client_id,
            session_id,
            launch.roles,
            launch.lineitem,
            launch.name,
        )
    )
    return session_id


def new_session(copies: Copies, custom: dict[str, Any]) -> str:
    """A session from the link's custom ``lesson``, ``setup`` (a ``POST /api/sessions``
    body, as JSON) or ``snapshot`` (a token); none of them: the default setup."""
    if "lesson" in custom:
        return lesson_session(copies, str(custom["lesson"]))
    if "snapshot" in custom:
        token = custom["snapshot"]
        if not isinstance(token, str) or not 0 < len(token) <= 100:
            raise Refused("custom", "the custom snapshot is not a snapshot token", 400)
        return snapshot_session(copies, token)
    raw = custom.get("setup", "{}")
    try:
        body = CreateSession.model_validate(json.loads(raw) if isinstance(raw, str) else raw)
    except (ValueError, RecursionError, pydantic.ValidationError) as error:
        raise Refused(
            "custom", f"the custom setup is not a session's setup: {error}", 400
        ) from None
    if body.snapshot is not None:
        return snapshot_session(copies, body.snapshot)
    if body.quiz:
        raise Refused("custom", "a custom setup cannot be a self-study quiz", 400)
    return copies.create(setup_of(body)).id


def snapshot_session(copies: Copies, token: str) -> str:
    try:
        return copies.from_snapshot(token).id
    except UnknownSession:
        raise Refused("custom", "no such snapshot (it may have expired)", 404) from None


def lesson_session(copies: Copies, lesson_id: str) -> str:
    """A new session on lesson ``lesson_id`` (a built-in one, or one a user wrote)."""
    db = copies.sessions.db
    try:
        doc = library.get(db, lesson_id)
    except library.NoLesson:
        raise Refused("lesson", f"no such lesson: {lesson_id[:64]!r}", 404) from None
    return copies.create(lesson_setup(lesson_id, doc, Settings(), db)).id
