"""LTI 1.3 (issue 30): the course's LMS launches the tool with a signed identity and role.

- ``config.py``: the platforms (``LOOP_STEPPER_LTI_CONFIG``, PyLTI1p3's tool-config format)
- ``keys.py``: the tool's RSA key, its ``kid`` and JWKS
- ``tool.py``: OIDC login initiation and every check of a launch's id_token (``Lti``)

PyJWT verifies signatures and times; every LTI check is written here (docs/development.md
says why not PyLTI1p3). No HTTP framework: ``app/web/lti.py`` is the routes.
"""

from app.lti.config import ConfigError, Platform
from app.lti.tool import Launch, Login, Lti, Refused

__all__ = ["ConfigError", "Launch", "Login", "Lti", "Platform", "Refused"]
