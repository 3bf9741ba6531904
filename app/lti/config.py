"""The platforms the tool trusts: ``LOOP_STEPPER_LTI_CONFIG``, a JSON file in PyLTI1p3's
tool-configuration format, and those added by dynamic registration (kept in the db)::

    {"https://lms.school.edu": [{"default": true, "client_id": "abc",
      "auth_login_url": "https://lms.school.edu/auth", "auth_token_url": "https://…/token",
      "key_set_url": "https://lms.school.edu/jwks", "deployment_ids": ["1"]}]}

An issuer may hold several clients (one per registration); ``default`` marks the one a login
without ``client_id`` uses. Every URL must be http(s); anything else is refused at start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_CONFIG_BYTES = 1024**2
URL_FIELDS = ("auth_login_url", "auth_token_url", "key_set_url")


class ConfigError(ValueError):
    """The tool configuration cannot be used; the message says where."""


@dataclass(frozen=True)
class Platform:
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    deployment_ids: tuple[str, ...]
    default: bool = False


def _text(entry: dict[str, Any], name: str, where: str) -> str:
    value = entry.get(name)
    if not isinstance(value, str) or not value or len(value) > 2048:
        raise ConfigError(f"{where}: {name} must be a non-empty string")
    if name in URL_FIELDS and not value.startswith(("https://", "http://")):
        raise ConfigError(f"{where}: {name} must be an http(s) URL")
    return value


def platform(issuer: str, entry: Any, where: str) -> Platform:
    """One tool-config entry of ``issuer``, checked."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: each entry is an object")
    ids = entry.get("deployment_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
        raise ConfigError(f"{where}: deployment_ids must be a non-empty list of strings")
    return Platform(
        issuer,
        _text(entry, "client_id", where),
        _text(entry, "auth_login_url", where),
        _text(entry, "auth_token_url", where),
        _text(entry, "key_set_url", where),
        tuple(ids),
        entry.get("default") is True,
    )


def parse(text: str, where: str = "LOOP_STEPPER_LTI_CONFIG") -> list[Platform]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where} is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: an object of issuers, each a list of entries")
    found: list[Platform] = []
    for issuer, entries in data.items():
        if not issuer or not isinstance(entries, list) or not entries:
            raise ConfigError(f"{where}: {issuer!r} must name a non-empty list of entries")
        found += [platform(issuer, e, f"{where} {issuer!r}[{i}]") for i, e in enumerate(entries)]
    return found


def read(path: str) -> list[Platform]:
    """The platforms of the file at ``path`` (``ConfigError`` when unusable)."""
    file = Path(path)
    try:
        if file.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES} bytes")
        return parse(file.read_text(encoding="utf-8"), str(path))
    except OSError as error:
        raise ConfigError(f"LOOP_STEPPER_LTI_CONFIG: cannot read {path}: {error}") from None
