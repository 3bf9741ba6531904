"""The pages: Jinja2 templates; everything else is static files."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from app.engine.scenarios import SCENARIOS
from app.lectures.lecture import normal
from app.web.catalogue import catalogue

router = APIRouter()


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def index(request: Request) -> HTMLResponse:
    templates: Jinja2Templates = request.app.state.templates
    scenarios = [info for info, _ in SCENARIOS.values()]  # the menus list what the engine has
    # ?embed=1: the compact page for an iframe in a slide or an LMS, decided here so the
    # full page never flashes before the script runs
    embed = request.query_params.get("embed") == "1"
    return templates.TemplateResponse(
        request,
        "index.html",
        {
            "scenarios": scenarios,
            "embed": embed,
            "mode": mode(request),
            "catalogue": catalogue(),
            "lti": request.app.state.lti is not None,  # the page asks GET /lti/me only then
        },
    )


def mode(request: Request) -> str:
    """The page's mode, and so its one script: compare mode (``?compare=<preset>``, the lesson's
    figure F4), the self-study question (``?quiz=1``) or the stepper. Chosen here, not by a
    script that then loads the mode's own: one request and one round trip fewer."""
    if "compare" in request.query_params:
        return "compare"
    return "selfstudy" if request.query_params.get("quiz") == "1" else "stepper"


@router.get("/join", response_class=HTMLResponse, include_in_schema=False)
def join(request: Request) -> HTMLResponse:
    """Students type the join code here."""
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(
        request, "follow.html", {"code": "", "root": "", "catalogue": catalogue()}
    )


@router.get("/l/{code}", response_class=HTMLResponse, include_in_schema=False)
def lecture(request: Request, code: str) -> HTMLResponse:
    """A lecture, followed live and read-only (the page says so if the code is unknown)."""
    templates: Jinja2Templates = request.app.state.templates
    code = normal(code)[:12]
    return templates.TemplateResponse(
        request, "follow.html", {"code": code, "root": "../", "catalogue": catalogue()}
    )
