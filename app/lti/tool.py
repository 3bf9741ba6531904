"""OIDC third-party login initiation and the launch's id_token, checked one rule at a time.

A failed check raises ``Refused`` naming it (``check``) with its HTTP status: 401 when the
token cannot be trusted (signature, kid, iss, aud, azp, exp, iat, nonce, a claim missing),
403 when a trusted token is not for this browser or tool (state, deployment_id, version,
message_type). Nothing is stored before every check passed: the nonce is used last.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import jwt

from app.db import Database
from app.lti import config
from app.lti.config import Platform
from app.lti.grades import Grades
from app.lti.keys import ToolKey, tool_key

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
MESSAGE_TYPES = ("LtiResourceLinkRequest", "LtiDeepLinkingRequest")
LOGIN_LIFE = 600.0  # seconds between the login and its launch (the nonce's life)
LEEWAY = 60  # seconds of clock difference allowed on exp and iat
JWKS_MAX_BYTES = 256 * 1024
JWKS_TIMEOUT = 5.0
REFETCH_AFTER = 1.0  # an unknown kid refetches the JWKS, at most this often per platform
MAX_TOKEN = 32 * 1024
# the roles that count as teaching (LIS vocabulary; short forms as some LMSs send them)
TEACHING = ("Instructor", "Administrator", "TeachingAssistant", "ContentDeveloper")


class Refused(Exception):
    """A login or launch refused: which ``check`` failed, the ``status`` and the words."""

    def __init__(self, check: str, words: str, status: int = 401) -> None:
        super().__init__(words)
        self.check, self.words, self.status = check, words, status


@dataclass(frozen=True)
class Login:
    """Where to send the browser (``url``), and the state to bind to it."""

    url: str
    state: str
    nonce: str
    storage_target: str | None
    platform_origin: str


@dataclass(frozen=True)
class Launch:
    """A checked id_token's claims that the tool uses."""

    issuer: str
    client_id: str
    deployment: str
    sub: str
    message_type: str
    roles: tuple[str, ...]
    link: str  # the resource link's id ("" for deep linking)
    custom: dict[str, Any]
    lineitem: str | None
    name: str | None
    claims: dict[str, Any] = field(repr=False, compare=False)

    @property
    def teaching(self) -> bool:
        return teaching(self.roles)


def teaching(roles: Iterable[str]) -> bool:
    """Instructor, Administrator, TeachingAssistant (or ContentDeveloper) among ``roles``."""
    return any(role_name(r) in TEACHING for r in roles)


def role_name(role: str) -> str:
    """``…/membership#Instructor`` and ``…/institution/person#Administrator`` → the name."""
    return role.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def deep_linking_settings(claims: dict[str, Any]) -> dict[str, Any]:
    """A deep-linking request's settings, checked: an http(s) ``deep_link_return_url`` and
    ``ltiResourceLink`` among the ``accept_types`` (403 otherwise)."""
    settings = claims.get(DL + "deep_linking_settings")
    if not isinstance(settings, dict):
        raise Refused("deep_linking_settings", "the request has no deep_linking_settings", 403)
    url = settings.get("deep_link_return_url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")) or len(url) > 2048:
        raise Refused("deep_link_return_url", "the deep_link_return_url is not an http(s) URL", 403)
    accepted = settings.get("accept_types", [])
    if not isinstance(accepted, list) or "ltiResourceLink" not in accepted:
        raise Refused("accept_types", "the platform does not accept an ltiResourceLink", 403)
    return settings


def origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def fetch_json(url: str) -> Any:
    """A platform's JSON document (its JWKS), bounded in size and time."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    # an http(s) URL: config.py refuses any other scheme
    with urllib.request.urlopen(request, timeout=JWKS_TIMEOUT) as answer:
        body = answer.read(JWKS_MAX_BYTES + 1)
    if len(body) > JWKS_MAX_BYTES:
        raise ValueError("the key set is too large")
    return json.loads(body)


class KeySets:
    """Each platform's public keys by kid, fetched once and again when a kid is unknown."""

    def __init__(
        self,
        fetch: Callable[[str], Any] = fetch_json,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch, self._clock = fetch, clock
        self._keys: dict[str, dict[str, jwt.PyJWK]] = {}
        self._fetched: dict[str, float] = {}
        self._lock = threading.Lock()

    def key(self, url: str, kid: str) -> jwt.PyJWK:
        with self._lock:
            known = self._keys.get(url, {})
            if kid in known:
                return known[kid]
            last = self._fetched.get(url)
            if last is not None and self._clock() - last < REFETCH_AFTER:
                raise Refused("kid", f"the platform's key set has no key {kid!r}")
            self._fetched[url] = self._clock()
        try:
            data = self._fetch(url)
            keys = {k["kid"]: jwt.PyJWK(k) for k in data["keys"] if isinstance(k.get("kid"), str)}
        except Exception as error:  # whatever the platform sent: not a key set
            raise Refused("kid", f"the platform's key set could not be read: {error}") from None
        with self._lock:
            self._keys[url] = keys
        if kid not in keys:
            raise Refused("kid", f"the platform's key set has no key {kid!r}")
        return keys[kid]


class Lti:
    """The tool: its platforms, its key, the platforms' keys, and the db's nonces."""

    def __init__(
        self,
        db: Database,
        platforms: Iterable[Platform],
        key: ToolKey,
        key_sets: KeySets | None = None,
    ) -> None:
        self.db, self.key = db, key
        self._configured = list(platforms)
        self.key_sets = key_sets or KeySets()
        self.grades = Grades(db, key, self.platforms)
        self.registration_key = ""  # dynamic registration's secret; empty: off

    @classmethod
    def from_settings(
        cls, db: Database, config_path: str, key_path: str, registration_key: str = ""
    ) -> Lti | None:
        """None (LTI off) when no platform is configured nor registered, and dynamic
        registration is off (no ``registration_key``)."""
        platforms = config.read(config_path) if config_path else []
        if not platforms and not registration_key and not db.lti_platforms():
            return None
        lti = cls(db, platforms, tool_key(db, key_path))
        lti.registration_key = registration_key
        return lti

    def platforms(self) -> list[Platform]:
        registered = [
            config.platform(issuer, json.loads(body), f"registered {issuer!r}")
            for issuer, _, body in self.db.lti_platforms()
        ]
        return self._configured + registered

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.key.jwk()]}

    # -- login ----------------------------------------------------------------------------

    def login(self, params: dict[str, str], redirect_uri: str) -> Login:
        """The OIDC login initiation: the platform and where to send the browser."""
        for name in ("iss", "login_hint"):
            if not params.get(name):
                raise Refused("login", f"the login has no {name}", 400)
        if any(len(v) > 4096 for v in params.values()):
            raise Refused("login", "a login parameter is over 4096 characters", 400)
        issuer, client_id = params["iss"], params.get("client_id")
        found = [p for p in self.platforms() if p.issuer == issuer]
        if client_id:
            found = [p for p in found if p.client_id == client_id]
        if not found:
            raise Refused("iss", f"no platform {issuer!r} (client {client_id!r}) is configured")
        chosen = next((p for p in found if p.default), found[0])
        deployment = params.get("lti_deployment_id")
        if deployment and deployment not in chosen.deployment_ids:
            raise Refused("deployment_id", f"deployment {deployment!r} is not known", 403)
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        target = params.get("lti_storage_target") or None
        self.db.add_lti_nonce(nonce, state, time.time() + LOGIN_LIFE, target)
        query = {
            "scope": "openid",
            "response_type": "id_token",
            "response_mode": "form_post",
            "prompt": "none",
            "client_id": chosen.client_id,
            "redirect_uri": redirect_uri,
            "login_hint": params["login_hint"],
            "state": state,
            "nonce": nonce,
        }
        if params.get("lti_message_hint"):
            query["lti_message_hint"] = params["lti_message_hint"]
        glue = "&" if urllib.parse.urlsplit(chosen.auth_login_url).query else "?"
        url = f"{chosen.auth_login_url}{glue}{urllib.parse.urlencode(query)}"
        return Login(url, state, nonce, target, origin(chosen.auth_login_url))

    def storage_of(self, state: str, id_token: str) -> tuple[str, str] | None:
        """(storage frame, platform origin) to ask for the state of a launch that came
        without its cookie, or None when its login was offered no platform storage."""
        target = self.db.lti_storage_target(state)
        if target is None:
            return None
        try:
            issuer = jwt.decode(id_token, options={"verify_signature": False}).get("iss")
        except jwt.PyJWTError:
            return None
        found = [p for p in self.platforms() if p.issuer == issuer]
        return None if not found else (target, origin(found[0].auth_login_url))

    # -- launch ---------------------------------------------------------------------------

    def launch(
        self,
        id_token: str,
        state: str,
        bound_state: str | None,
        message_types: tuple[str, ...] = MESSAGE_TYPES,
    ) -> Launch:
        """Every check of the id_token, in turn; the nonce is used only when all passed.
        ``bound_state``: the state this browser holds (its cookie, or the platform storage's
        copy posted back by the launch page); None when it holds none. ``message_types``:
        those the caller serves (the others are refused before the nonce is used)."""
        if (
            not state
            or bound_state is None
            or not secrets.compare_digest(state.encode(), bound_state.encode())
        ):
            raise Refused("state", "the state does not match this browser's login", 403)
        if not id_token or len(id_token) > MAX_TOKEN:
            raise Refused("id_token", "no id_token, or one over 32 KB")
        try:
            header = jwt.get_unverified_header(id_token)
            unverified = jwt.decode(id_token, options={"verify_signature": False})
        except (jwt.PyJWTError, ValueError, RecursionError) as error:
            raise Refused("id_token", f"the id_token is not a JWT: {error}") from None
        if not isinstance(unverified, dict) or header.get("alg") != "RS256":
            raise Refused("alg", "the id_token is not signed with RS256")
        issuer = unverified.get("iss")
        platforms = [p for p in self.platforms() if p.issuer == issuer]
        if not isinstance(issuer, str) or not platforms:
            raise Refused("iss", f"the issuer {issuer!r} is not a configured platform")
        aud = unverified.get("aud")
        auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        platform = next((p for p in platforms if p.client_id in auds), None)
        if platform is None:
            raise Refused("aud", "the audience does not contain this tool's client_id")
        if len(auds) > 1 and unverified.get("azp") != platform.client_id:
            raise Refused("azp", "several audiences and azp is not this tool's client_id")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Refused("kid", "the id_token's header has no kid")
        key = self.key_sets.key(platform.key_set_url, kid)
        claims = self._verified(id_token, key, platform)
        return self._checked(claims, platform, state, message_types)

    def _verified(self, id_token: str, key: jwt.PyJWK, platform: Platform) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key,
                algorithms=["RS256"],
                audience=platform.client_id,
                issuer=platform.issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iat", "sub", "nonce"]},
            )
        except jwt.InvalidSignatureError:
            raise Refused("signature", "the id_token's signature is not the platform's") from None
        except jwt.ExpiredSignatureError:
            raise Refused("exp", "the id_token has expired") from None
        except (jwt.ImmatureSignatureError, jwt.InvalidIssuedAtError):
            raise Refused("iat", "the id_token is issued in the future") from None
        except jwt.MissingRequiredClaimError as error:
            raise Refused(error.claim, f"the id_token has no {error.claim}") from None
        except jwt.PyJWTError as error:
            raise Refused("id_token", f"the id_token is refused: {error}") from None
        return claims

    def _checked(
        self, claims: dict[str, Any], platform: Platform, state: str, served: tuple[str, ...]
    ) -> Launch:
        if claims.get(LTI + "version") != "1.3.0":
            raise Refused("version", "the LTI version is not 1.3.0", 403)
        message_type = claims.get(LTI + "message_type")
        if message_type not in served:
            raise Refused("message_type", f"the message type {message_type!r} is not served", 403)
        deployment = claims.get(LTI + "deployment_id")
        if deployment not in platform.deployment_ids:
            raise Refused("deployment_id", f"deployment {deployment!r} is not known", 403)
        link = claims.get(LTI + "resource_link") or {}
        link_id = link.get("id") if isinstance(link, dict) else None
        if message_type == "LtiResourceLinkRequest" and (
            not isinstance(link_id, str) or not link_id
        ):
            raise Refused("resource_link", "the launch names no resource link")
        if message_type == "LtiDeepLinkingRequest":
            deep_linking_settings(claims)
        sub = claims["sub"]
        if not isinstance(sub, str) or not sub or len(sub) > 255:
            raise Refused("sub", "the id_token's sub is not a user id")
        roles = claims.get(LTI + "roles", [])
        custom = claims.get(LTI + "custom") or {}
        ags = claims.get(AGS) or {}
        lineitem = ags.get("lineitem") if isinstance(ags, dict) else None
        name = claims.get("name")
        if not self.db.use_lti_nonce(str(claims["nonce"]), state):  # last: nothing before it
            raise Refused("nonce", "the nonce is unknown, expired or used already")
        return Launch(
            platform.issuer,
            platform.client_id,
            str(deployment),
            sub,
            str(message_type),
            tuple(r for r in roles if isinstance(r, str)) if isinstance(roles, list) else (),
            str(link_id or ""),
            custom if isinstance(custom, dict) else {},
            lineitem if isinstance(lineitem, str) else None,
            name if isinstance(name, str) else None,
            claims,
        )
