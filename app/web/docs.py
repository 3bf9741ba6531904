"""``/docs``: Swagger UI from this server's own static files, so it works offline.

FastAPI's default page loads Swagger UI from a CDN and starts it with an inline script; a
classroom may have no internet, and the Content-Security-Policy forbids both. The vendored
files live in ``static/vendor/swagger-ui/`` (see its README). Every URL is relative to
``/docs``, so the page works as well under a reverse proxy's prefix (``/loop-stepper/docs``).
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter()

ASSETS = "static/vendor/swagger-ui"
PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Loop Stepper - API docs</title>
<link rel="icon" type="image/png" href="{ASSETS}/favicon-32x32.png">
<link rel="stylesheet" href="{ASSETS}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{ASSETS}/swagger-ui-bundle.js"></script>
<script src="{ASSETS}/init.js"></script>
</body>
</html>
"""


@router.get("/docs", response_class=HTMLResponse, include_in_schema=False)
def docs() -> HTMLResponse:
    return HTMLResponse(PAGE)
