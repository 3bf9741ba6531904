"""The tool's RSA key: made at first start and kept in the db (``lti_keys``), or read from the
PEM file ``LOOP_STEPPER_LTI_KEY`` names. Its ``kid`` is the key's RFC 7638 thumbprint, so the
same key always has the same kid; ``GET /lti/jwks`` publishes the public part."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.db import Database
from app.lti.config import ConfigError


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class ToolKey:
    def __init__(self, private: rsa.RSAPrivateKey) -> None:
        self.private = private
        numbers = private.public_key().public_numbers()
        self._public = {"e": _b64(numbers.e), "kty": "RSA", "n": _b64(numbers.n)}
        canonical = json.dumps(self._public, separators=(",", ":"), sort_keys=True)
        digest = hashlib.sha256(canonical.encode()).digest()
        self.kid = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def jwk(self) -> dict[str, Any]:
        return {**self._public, "kid": self.kid, "alg": "RS256", "use": "sig"}

    def pem(self) -> str:
        return self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    @classmethod
    def from_pem(cls, pem: bytes) -> ToolKey:
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey) or key.key_size < 2048:
            raise ValueError("the LTI key must be an RSA private key of at least 2048 bits")
        return cls(key)

    @classmethod
    def made(cls) -> ToolKey:
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048))


def tool_key(db: Database, path: str = "") -> ToolKey:
    """The PEM file at ``path``, else the db's key (made and kept now if it has none)."""
    if path:
        try:
            return ToolKey.from_pem(Path(path).read_bytes())
        except (OSError, ValueError, TypeError) as error:
            raise ConfigError(f"LOOP_STEPPER_LTI_KEY: {path}: {error}") from None

    def make() -> tuple[str, str]:
        fresh = ToolKey.made()
        return fresh.kid, fresh.pem()

    _, pem = db.lti_key(make)
    return ToolKey.from_pem(pem.encode())
