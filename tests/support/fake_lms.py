"""A fake LMS of our own: a real small HTTP server on a free 127.0.0.1 port, speaking LTI 1.3
to the tool as Moodle or Canvas would.

- its own RSA key and JWKS (``/jwks``; ``rotate()`` makes a new key with a new kid)
- a course page with the tool in an iframe (``/course``), and login initiation (``/start``:
  the browser is sent to the tool's ``/lti/login``)
- an authorization endpoint (``/auth``) that checks the tool's request and auto-posts a signed
  id_token to the tool's launch, as a platform's form_post does
- a token endpoint (``/token``) that verifies the tool's client-credentials JWT assertion
  against the tool's JWKS, and hands out bearer tokens
- line-item score endpoints (``/lineitems/<n>/scores``) that record what they get (``scores``);
  ``down = True`` answers 503 to them
- a deep-linking return endpoint (``/deep_link_return``, recorded in ``deep_links``)
- dynamic registration (``/registration/openid-configuration``, ``/registration``)

``id_token(nonce=…, **changes)`` signs a launch's claims for a test to post by itself; a
change of ``None`` drops the claim. Nothing here is imported by the app.
"""

from __future__ import annotations

import html
import json
import secrets
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from support.process import free_port

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
CLIENT_ID = "loop-stepper-client"
DEPLOYMENT = "deployment-1"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"


# LTI's client-side postMessage storage, as a platform's page answers it: put_data and get_data
# from a frame, kept per the frame's origin (window.ltiStore, for a test to read)
STORAGE = """<script>
window.ltiStore = {};
window.addEventListener("message", (event) => {
  const m = event.data;
  if (!m || typeof m.subject !== "string" || !event.source) return;
  const key = `${event.origin} ${m.key}`;
  const answer = { subject: `${m.subject}.response`, message_id: m.message_id, key: m.key };
  if (m.subject === "lti.put_data") {
    window.ltiStore[key] = m.value;
    event.source.postMessage({ ...answer, value: m.value }, event.origin);
  } else if (m.subject === "lti.get_data") {
    const value = window.ltiStore[key];
    event.source.postMessage(value === undefined ? { ...answer, error: { code: "bad_request" } }
      : { ...answer, value }, event.origin);
  }
});
</script>"""


@dataclass
class User:
    sub: str
    roles: list[str]
    name: str | None = None


STUDENT = User("student-1", ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"])
TEACHER = User("teacher-1", ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"])


@dataclass
class FakeLms:
    url: str = ""
    tool: str = ""  # the tool's base URL (its /lti/jwks, /lti/login)
    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    kid: str = field(default_factory=lambda: secrets.token_hex(8))
    old_keys: list[tuple[str, rsa.RSAPrivateKey]] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)
    deep_links: list[dict[str, Any]] = field(default_factory=list)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)  # content items deep linked
    tokens: dict[str, float] = field(default_factory=dict)  # bearer → expiry
    assertions: list[dict[str, Any]] = field(default_factory=list)
    auth_requests: list[dict[str, str]] = field(default_factory=list)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # login_hint → launch
    down: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def issuer(self) -> str:
        return self.url

    def config(self) -> dict[str, Any]:
        """This LMS in PyLTI1p3's tool-config format (``LOOP_STEPPER_LTI_CONFIG``)."""
        return {
            self.issuer: [
                {
                    "default": True,
                    "client_id": CLIENT_ID,
                    "auth_login_url": f"{self.url}/auth",
                    "auth_token_url": f"{self.url}/token",
                    "key_set_url": f"{self.url}/jwks",
                    "deployment_ids": [DEPLOYMENT],
                }
            ]
        }

    def jwks(self) -> dict[str, Any]:
        keys = [(self.kid, self.key), *self.old_keys]
        return {"keys": [jwk(kid, k) for kid, k in keys]}

    def rotate(self) -> None:
        """A new key with a new kid; the old one stays published."""
        self.old_keys.append((self.kid, self.key))
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = secrets.token_hex(8)

    def claims(
        self,
        nonce: str,
        user: User = STUDENT,
        link: str = "link-1",
        custom: dict[str, Any] | None = None,
        deep: bool = False,
    ) -> dict[str, Any]:
        """A launch's claims; ``deep``: an ``LtiDeepLinkingRequest`` instead."""
        now = int(time.time())
        found: dict[str, Any] = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "sub": user.sub,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            LTI + "version": "1.3.0",
            LTI + "message_type": "LtiResourceLinkRequest",
            LTI + "deployment_id": DEPLOYMENT,
            LTI + "target_link_uri": f"{self.tool}/lti/launch",
            LTI + "resource_link": {"id": link, "title": "A link"},
            LTI + "roles": user.roles,
            LTI + "custom": custom or {},
            AGS: {
                "scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"],
                "lineitem": f"{self.url}/lineitems/1",
            },
        }
        if user.name:
            found["name"] = user.name
        if deep:
            found[LTI + "message_type"] = "LtiDeepLinkingRequest"
            found.pop(LTI + "resource_link")
            found.pop(AGS)
            found[DL + "deep_linking_settings"] = {
                "deep_link_return_url": f"{self.url}/deep_link_return",
                "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"],
                "data": "dl-data-1",
            }
        return found

    def id_token(
        self,
        nonce: str,
        *,
        key: rsa.RSAPrivateKey | None = None,
        kid: str | None = None,
        user: User = STUDENT,
        link: str = "link-1",
        custom: dict[str, Any] | None = None,
        deep: bool = False,
        **changes: Any,
    ) -> str:
        claims = self.claims(nonce, user, link, custom, deep)
        for name, value in changes.items():
            name = LTI + name[4:] if name.startswith("lti_") else name
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        return jwt.encode(
            claims, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid}
        )

    def start_url(
        self,
        user: User = STUDENT,
        link: str = "link-1",
        custom: dict[str, Any] | None = None,
        deep: bool = False,
    ) -> str:
        """Where a browser starts a launch: this LMS's page that sends it to the tool."""
        hint = secrets.token_hex(6)
        with self.lock:
            self.pending[hint] = {"user": user, "link": link, "custom": custom, "deep": deep}
        return f"{self.url}/start?hint={hint}"

    def course_url(
        self,
        user: User = STUDENT,
        link: str = "link-1",
        custom: dict[str, Any] | None = None,
        storage: bool = False,
        deep: bool = False,
    ) -> str:
        """A course page of this LMS with the tool's link in an iframe, as Moodle shows it;
        ``storage``: the page offers LTI's postMessage storage (``lti_storage_target``);
        ``deep``: the iframe is a deep-linking request (adding the tool to the course)."""
        start = urllib.parse.urlsplit(self.start_url(user, link, custom, deep))
        return f"{self.url}/course?{start.query}{'&storage=1' if storage else ''}"

    def tool_claims(self, token: str, audience: str) -> dict[str, Any]:
        """A JWT the tool signed (issued by its client_id to ``audience``), checked against
        the tool's JWKS."""
        kid = jwt.get_unverified_header(token)["kid"]
        keys = {k["kid"]: k for k in fetch_json(f"{self.tool}/lti/jwks")["keys"]}
        claims: dict[str, Any] = jwt.decode(
            token, jwt.PyJWK(keys[kid]), algorithms=["RS256"], audience=audience, issuer=CLIENT_ID
        )
        return claims


def jwk(kid: str, key: rsa.RSAPrivateKey) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {**found, "kid": kid, "alg": "RS256", "use": "sig"}


def fetch_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


class Handler(BaseHTTPRequestHandler):
    lms: FakeLms

    def log_message(self, *_: object) -> None:  # quiet
        pass

    def send(
        self,
        status: int,
        body: bytes | str,
        kind: str = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def json(self, status: int, data: Any) -> None:
        self.send(status, json.dumps(data), "application/json")

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:
        lms = self.lms
        parts = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parts.query))
        if parts.path == "/jwks":
            self.json(200, lms.jwks())
        elif parts.path == "/start":  # the LMS's page: off to the tool's login initiation
            hint = query.get("hint", "")
            login = {
                "iss": lms.issuer,
                "login_hint": hint,
                "target_link_uri": f"{lms.tool}/lti/launch",
                "lti_message_hint": f"m-{hint}",
                "client_id": CLIENT_ID,
                "lti_deployment_id": DEPLOYMENT,
            }
            if query.get("storage") == "1":
                login["lti_storage_target"] = "_parent"
            where = f"{lms.tool}/lti/login?{urllib.parse.urlencode(login)}"
            self.send(302, "", headers={"Location": where})
        elif parts.path == "/course":
            storage = query.get("storage") == "1"
            hint = urllib.parse.quote(query.get("hint", ""))
            src = html.escape(f"/start?hint={hint}{'&storage=1' if storage else ''}")
            self.send(
                200,
                "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                "<title>Week 3: Fake LMS</title></head><body><h1>Week 3</h1>"
                f"<iframe src='{src}' width='1100' height='700' title='Loop Stepper'>"
                f"</iframe>{STORAGE if storage else ''}</body></html>",
            )
        elif parts.path == "/auth":
            self.authorize(query)
        elif parts.path == "/registration/openid-configuration":
            self.json(
                200,
                {
                    "issuer": lms.issuer,
                    "authorization_endpoint": f"{lms.url}/auth",
                    "token_endpoint": f"{lms.url}/token",
                    "jwks_uri": f"{lms.url}/jwks",
                    "registration_endpoint": f"{lms.url}/registration",
                    "https://purl.imsglobal.org/spec/lti-platform-configuration": {
                        "product_family_code": "fake-lms",
                        "version": "1.0",
                    },
                },
            )
        else:
            self.send(404, "no such page")

    def authorize(self, query: dict[str, str]) -> None:
        """Checks the tool's authentication request, then posts the id_token back."""
        lms = self.lms
        with lms.lock:
            lms.auth_requests.append(query)
            launch = lms.pending.get(query.get("login_hint", ""))
        expected = {
            "scope": "openid",
            "response_type": "id_token",
            "response_mode": "form_post",
            "prompt": "none",
            "client_id": CLIENT_ID,
        }
        wrong = [k for k, v in expected.items() if query.get(k) != v]
        if launch is None or wrong or not query.get("nonce") or not query.get("state"):
            self.send(400, f"bad authentication request: {wrong or 'login_hint/nonce/state'}")
            return
        if query.get("redirect_uri") != f"{lms.tool}/lti/launch":
            self.send(400, "redirect_uri is not the tool's launch")
            return
        token = lms.id_token(
            query["nonce"],
            user=launch["user"],
            link=launch["link"],
            custom=launch["custom"],
            deep=launch["deep"],
        )
        action = html.escape(query["redirect_uri"])
        page = (
            "<!doctype html><html lang='en'><head><title>Fake LMS</title></head><body>"
            f"<form id='f' method='post' action='{action}'>"
            f"<input type='hidden' name='id_token' value='{html.escape(token)}'>"
            f"<input type='hidden' name='state' value='{html.escape(query['state'])}'>"
            "</form><script>document.getElementById('f').submit()</script></body></html>"
        )
        self.send(200, page)

    def do_POST(self) -> None:
        lms = self.lms
        path = urllib.parse.urlsplit(self.path).path
        body = self.body()
        if path == "/token":
            self.token(dict(urllib.parse.parse_qsl(body.decode())))
        elif path.startswith("/lineitems/") and path.endswith("/scores"):
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            if lms.down:
                self.send(503, "down")
            elif lms.tokens.get(bearer, 0) < time.time():
                self.send(401, "no valid bearer token")
            elif self.headers.get("Content-Type") != SCORE_TYPE:
                self.send(415, "not a score")
            else:
                with lms.lock:
                    lms.scores.append(
                        {"lineitem": lms.url + path[: -len("/scores")], **json.loads(body)}
                    )
                self.send(200, "", "application/json")
        elif path == "/deep_link_return":  # the tool's signed answer, checked, its item kept
            form = dict(urllib.parse.parse_qsl(body.decode()))
            try:
                claims = lms.tool_claims(form.get("JWT", ""), audience=lms.issuer)
            except (KeyError, jwt.PyJWTError) as error:
                self.send(400, f"bad deep-linking response: {html.escape(str(error))}")
                return
            with lms.lock:
                lms.deep_links.append({**form, "claims": claims})
                lms.links += claims.get(DL + "content_items", [])
            self.send(
                200,
                "<!doctype html><html lang='en'><head><title>Linked</title></head>"
                "<body><main><h1 id='linked'>Linked</h1></main></body></html>",
            )
        elif path == "/registration":
            registration = json.loads(body)
            with lms.lock:
                lms.registrations.append(
                    {**registration, "authorization": self.headers.get("Authorization")}
                )
                client_id = f"reg-{len(lms.registrations)}"
            tool_config = registration.get(TOOL_CONFIG, {})
            self.json(
                200,
                {
                    **registration,
                    "client_id": client_id,
                    TOOL_CONFIG: {**tool_config, "deployment_id": f"dep-{client_id}"},
                },
            )
        else:
            self.send(404, "no such endpoint")

    def token(self, form: dict[str, str]) -> None:
        """The client-credentials grant: the tool's assertion, checked against its JWKS."""
        lms = self.lms
        if (
            form.get("grant_type") != "client_credentials"
            or form.get("client_assertion_type")
            != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        ):
            self.json(400, {"error": "unsupported_grant_type"})
            return
        assertion = form.get("client_assertion", "")
        try:
            claims = lms.tool_claims(assertion, audience=f"{lms.url}/token")
        except (KeyError, jwt.PyJWTError) as error:
            self.json(401, {"error": "invalid_client", "error_description": str(error)})
            return
        bearer = secrets.token_hex(16)
        with lms.lock:
            lms.assertions.append(claims)
            lms.tokens[bearer] = time.time() + 3600
        self.json(
            200,
            {
                "access_token": bearer,
                "token_type": "Bearer",
                "expires_in": 3600,
                "scope": form.get("scope", ""),
            },
        )


@contextmanager
def fake_lms() -> Iterator[FakeLms]:
    """A fake LMS on a free loopback port; set its ``tool`` before the first launch."""
    lms = FakeLms()
    handler = type("BoundHandler", (Handler,), {"lms": lms})
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    lms.url = f"http://127.0.0.1:{port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield lms
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
