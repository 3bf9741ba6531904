"""Deep linking (LTI 1.3): an instructor's ``LtiDeepLinkingRequest`` opens a picker; what they
pick goes back to the platform as a signed ``LtiDeepLinkingResponse`` holding one
``ltiResourceLink`` content item (its title, the tool's launch URL, the custom parameter that
says what a launch opens, and a line item for the grades).

Between the picker page and its answer the request's context (the platform, deployment,
return URL and ``data``) travels as a ticket: a JWT signed by the tool's own key, good for an
hour and for this tool only. Nothing is stored.
"""

from __future__ import annotations

import json
import re
import secrets
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt

from app.engine.scenarios import SCENARIOS
from app.lti.keys import ToolKey
from app.lti.tool import DL, LTI, Launch, Refused, deep_linking_settings

TICKET_AUDIENCE = "loop-stepper-deep-linking"
TICKET_LIFE = 3600
MAX_TITLE = 200
SNAPSHOT = re.compile(r"[A-Za-z0-9_-]{1,100}")


@dataclass(frozen=True)
class Picking:
    """A deep-linking request's context, as the picker's ticket carries it."""

    issuer: str
    client_id: str
    deployment: str
    return_url: str
    data: str | None


def picking(launch: Launch) -> Picking:
    """The context of a checked ``LtiDeepLinkingRequest`` (its settings checked by the launch)."""
    settings = deep_linking_settings(launch.claims)
    data = settings.get("data")
    return Picking(
        launch.issuer,
        launch.client_id,
        launch.deployment,
        settings["deep_link_return_url"],
        data if isinstance(data, str) and len(data) <= 4096 else None,
    )


def ticket(key: ToolKey, pick: Picking) -> str:
    now = int(time.time())
    claims = {
        "iss": TICKET_AUDIENCE,
        "aud": TICKET_AUDIENCE,
        "iat": now,
        "exp": now + TICKET_LIFE,
        "pick": [pick.issuer, pick.client_id, pick.deployment, pick.return_url, pick.data],
    }
    return jwt.encode(claims, key.private, algorithm="RS256", headers={"kid": key.kid})


def read_ticket(key: ToolKey, token: str) -> Picking:
    """The ticket's context; ``Refused`` (403) for one not signed here, or expired."""
    try:
        claims = jwt.decode(
            token[:8192],
            key.private.public_key(),
            algorithms=["RS256"],
            audience=TICKET_AUDIENCE,
            issuer=TICKET_AUDIENCE,
        )
        issuer, client_id, deployment, url, data = claims["pick"]
    except (jwt.PyJWTError, KeyError, TypeError, ValueError):
        raise Refused("ticket", "the picker's ticket is not this tool's, or expired", 403) from None
    return Picking(str(issuer), str(client_id), str(deployment), str(url), data)


def origin_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def snapshot_token(pasted: str) -> str:
    """A snapshot's token from a pasted link (``…?snapshot=TOKEN``) or the token itself."""
    text = pasted.strip()[:4096]
    found = urllib.parse.parse_qs(urllib.parse.urlsplit(text).query).get("snapshot")
    token = found[0] if found else text
    if not SNAPSHOT.fullmatch(token):
        raise ValueError("not a snapshot link nor a snapshot's token")
    return token


LESSON = re.compile(r"[A-Za-z0-9_-]{1,64}")


def custom_of(kind: str, scenario: str, snapshot: str, lesson: str) -> dict[str, str]:
    """The link's custom parameter (every value a string, as LTI's custom claims are):
    ``{"setup": "<a POST /api/sessions body as JSON>"}``, ``{"snapshot": token}`` or
    ``{"lesson": id}``. ``ValueError`` names what is wrong."""
    if kind == "setup":
        if scenario not in SCENARIOS:
            raise ValueError(f"no scenario {scenario[:40]!r}; the scenarios are {list(SCENARIOS)}")
        return {"setup": json.dumps({"scenario": scenario}, separators=(",", ":"))}
    if kind == "snapshot":
        return {"snapshot": snapshot_token(snapshot)}
    if kind == "lesson":  # a built-in lesson's id or a written one's (its launch finds it)
        if not LESSON.fullmatch(lesson.strip()):
            raise ValueError("a lesson's id: letters, digits, - and _ (from its link)")
        return {"lesson": lesson.strip()}
    raise ValueError("choose a lesson, a setup or a snapshot")


def item(title: str, url: str, custom: dict[str, str], questions: int) -> dict[str, Any]:
    """The one ``ltiResourceLink`` content item; its line item counts the link's questions
    (none: a lesson that asks nothing has no gradebook column)."""
    title = title.strip()[:MAX_TITLE] or "Loop Stepper"
    content: dict[str, Any] = {
        "type": "ltiResourceLink",
        "title": title,
        "url": url,
        "custom": custom,
    }
    if questions > 0:
        content["lineItem"] = {"scoreMaximum": questions, "label": title}
    return content


def response(key: ToolKey, pick: Picking, content: dict[str, Any]) -> str:
    """The signed ``LtiDeepLinkingResponse`` (the tool's client_id to the platform)."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": pick.client_id,
        "aud": pick.issuer,
        "azp": pick.client_id,
        "iat": now,
        "exp": now + 600,
        "nonce": secrets.token_urlsafe(16),
        LTI + "deployment_id": pick.deployment,
        LTI + "message_type": "LtiDeepLinkingResponse",
        LTI + "version": "1.3.0",
        DL + "content_items": [content],
    }
    if pick.data is not None:
        claims[DL + "data"] = pick.data
    return jwt.encode(claims, key.private, algorithm="RS256", headers={"kid": key.kid})


class BadChoice(ValueError):
    """The picker's choice cannot be linked (the words say why); ``pick`` to ask again."""

    def __init__(self, pick: Picking, words: str) -> None:
        super().__init__(words)
        self.pick = pick


@dataclass(frozen=True)
class Answer:
    pick: Picking
    item: dict[str, Any]
    jwt: str


def answer(
    key: ToolKey,
    params: dict[str, str],
    launch_url: str,
    questions: Callable[[dict[str, str]], int],
) -> Answer:
    """The picker's form (``ticket``, ``kind``, ``scenario``, ``snapshot``, ``lesson``,
    ``title``) → the signed answer; ``questions`` counts a link's (``ValueError``: no such
    lesson). ``Refused`` for a ticket not ours; ``BadChoice``."""
    pick = read_ticket(key, params.get("ticket", ""))
    try:
        custom = custom_of(
            params.get("kind", ""),
            params.get("scenario", ""),
            params.get("snapshot", ""),
            params.get("lesson", ""),
        )
        count = questions(custom)
    except ValueError as error:
        raise BadChoice(pick, str(error)) from None
    content = item(params.get("title", ""), launch_url, custom, count)
    return Answer(pick, content, response(key, pick, content))
