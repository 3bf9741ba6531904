"""Dynamic registration (1EdTech LTI Dynamic Registration 1.0: Moodle 4.x, Canvas,
Brightspace): the platform opens ``/lti/register?openid_configuration=…&registration_token=…``
in a frame; the tool reads the platform's OpenID configuration, posts its own registration
(its login, launch, JWKS and deep-linking URLs, the scopes it needs, its name and icon) to the
platform's registration endpoint, and keeps the platform the answer describes
(``lti_platforms``): its next login and launch are trusted like a configured one's.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from app.db import Database
from app.lti import config
from app.lti.grades import SCORE_SCOPE
from app.lti.tool import Refused

TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIG = "https://purl.imsglobal.org/spec/lti-platform-configuration"
NAME = "Loop Stepper"
DESCRIPTION = "Step one PyTorch training iteration line by line, predicting each line first."
MAX_ANSWER = 256 * 1024
TIMEOUT = 10.0


def _http(url: str, body: bytes | None = None, token: str = "") -> Any:
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers)
    try:  # http(s) only: checked by the caller
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            data = answer.read(MAX_ANSWER + 1)
    except urllib.error.HTTPError as error:
        error.close()  # its socket
        raise Refused("registration", f"{url} answered {error.code}", 502) from None
    except (urllib.error.URLError, OSError) as error:
        raise Refused("registration", f"{url} could not be reached: {error}", 502) from None
    if len(data) > MAX_ANSWER:
        raise Refused("registration", f"{url} answered over {MAX_ANSWER} bytes", 502)
    try:
        return json.loads(data)
    except ValueError:
        raise Refused("registration", f"{url} did not answer JSON", 502) from None


def _url(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise Refused("registration", f"the platform's configuration has no {name} URL", 502)
    return value


def registration(base: str, scopes: list[str]) -> dict[str, Any]:
    """The tool's registration (OpenID Connect client metadata with LTI's tool configuration),
    its URLs under ``base``."""
    domain = base.split("://", 1)[-1].split("/", 1)[0]
    launch = f"{base}/lti/launch"
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": f"{base}/lti/login",
        "redirect_uris": [launch],
        "client_name": NAME,
        "jwks_uri": f"{base}/lti/jwks",
        "logo_uri": f"{base}/static/icon.svg",
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(scopes),
        TOOL_CONFIG: {
            "domain": domain,
            "description": DESCRIPTION,
            "target_link_uri": launch,
            "claims": ["iss", "sub", "name"],
            "messages": [
                {"type": "LtiResourceLinkRequest", "target_link_uri": launch},
                {
                    "type": "LtiDeepLinkingRequest",
                    "target_link_uri": launch,
                    "label": NAME,
                    "placements": ["ContentArea"],
                    "supported_types": ["ltiResourceLink"],
                },
            ],
        },
    }


def register(db: Database, openid_configuration: str, token: str, base: str) -> str:
    """Register with the platform whose configuration is at ``openid_configuration``; keep it.
    The platform's name (its issuer). ``Refused`` (400 or 502) says what went wrong."""
    if (
        not openid_configuration.startswith(("https://", "http://"))
        or len(openid_configuration) > 2048
        or len(token) > 4096
    ):
        raise Refused("registration", "openid_configuration must be an http(s) URL", 400)
    found = _http(openid_configuration)
    if not isinstance(found, dict):
        raise Refused("registration", "the platform's configuration is not an object", 502)
    issuer = found.get("issuer")
    # the spec: the configuration is served under its issuer
    if not isinstance(issuer, str) or not issuer or not openid_configuration.startswith(issuer):
        raise Refused("registration", "the configuration's issuer does not match its URL", 502)
    endpoint = _url(found, "registration_endpoint")
    entry: dict[str, Any] = {
        "auth_login_url": _url(found, "authorization_endpoint"),
        "auth_token_url": _url(found, "token_endpoint"),
        "key_set_url": _url(found, "jwks_uri"),
    }
    offered = found.get("scopes_supported")
    scopes = [SCORE_SCOPE]
    if isinstance(offered, list) and all(isinstance(s, str) for s in offered):
        scopes = [s for s in scopes if s in offered] or scopes
    answer = _http(endpoint, json.dumps(registration(base, scopes)).encode(), token)
    tool_config = answer.get(TOOL_CONFIG) if isinstance(answer, dict) else None
    client_id = answer.get("client_id") if isinstance(answer, dict) else None
    deployment = tool_config.get("deployment_id") if isinstance(tool_config, dict) else None
    if not isinstance(client_id, str) or not client_id or len(client_id) > 255:
        raise Refused("registration", "the platform's answer has no client_id", 502)
    if not isinstance(deployment, str) or not deployment:
        raise Refused("registration", "the platform's answer has no deployment_id", 502)
    entry |= {"client_id": client_id, "deployment_ids": [deployment]}
    try:
        config.platform(issuer, entry, f"registered {issuer!r}")
    except config.ConfigError as error:
        raise Refused("registration", str(error), 502) from None
    db.save_lti_platform(issuer, client_id, json.dumps(entry))
    return issuer
