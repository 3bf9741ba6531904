"""Server settings, read from the environment (prefix ``LOOP_STEPPER_``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent
# One CSP source expression: 'self', a scheme ("https:"), or an origin with optional
# wildcard host and port. Nothing that could end the directive (";", ",", quotes, spaces).
_SOURCE = re.compile(
    r"'self'|'none'|[a-z][a-z0-9+.-]*:|([a-z][a-z0-9+.-]*://)?(\*\.)?[a-z0-9.-]+(:(\d+|\*))?"
)


def user_data() -> Path:
    """Where a user's data goes on this system (XDG): ~/.local/share/loop-stepper."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "loop-stepper"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOOP_STEPPER_")

    host: str = "127.0.0.1"
    port: int = 8000
    max_sessions: int = 1000  # sessions in memory at once; the least recently used make room
    idle_timeout: float = 1800.0  # seconds without a request before a session leaves memory
    data: str = str(user_data())  # the database's folder (sessions.sqlite3); ":memory:" keeps none
    # postgresql://user:password@host:port/db: the sessions' logs in PostgreSQL (several
    # processes or machines share it) instead of SQLite's file in `data`. Empty: SQLite.
    database_url: str = ""
    retain_days: float = 7.0  # a session idle this long is deleted from the database
    snapshot_days: float = 365.0  # how long a shared snapshot lives
    store_max_sessions: int = 20_000  # logs (sessions and snapshots) in the database
    store_max_bytes: int = 2 * 1024**3  # their events and keyframes; oldest idle go first
    sweep_interval: float = 600.0  # seconds between the database's retention sweeps
    torch_threads: int = 1  # many tiny models on few cores: one intra-op thread each
    evict_interval: float = 30.0  # seconds between sweeps that drop idle sessions
    max_body: int = 16 * 1024  # bytes; a larger request body is a 413 (valid ones are < 1 KB)
    # CSV datasets (issue 28, POST /api/datasets): the file's bytes (its own body limit, in
    # place of max_body), its rows (the header not counted) and columns; past any, refused
    dataset_max_bytes: int = Field(default=1024**2, ge=1)
    dataset_max_rows: int = Field(default=10_000, ge=1)
    dataset_max_columns: int = Field(default=1_024, ge=1)
    # a session's own model and data (issue 28, docs/api.md#your-own-model-and-data): past any
    # of these a spec is refused (422) before the session exists
    spec_max_params: int = Field(default=100_000, ge=1)
    spec_max_layers: int = Field(default=32, ge=1)
    spec_max_rows: int = Field(default=10_000, ge=1)
    spec_max_features: int = Field(default=1_024, ge=1)
    spec_max_batch: int = Field(default=1_024, ge=1)
    # the body of a create or a check (POST /api/sessions, /api/models/check), which may carry
    # a spec with inline points (up to 1,000 rows; more is a CSV's job); every other body is
    # held to max_body
    spec_max_body: int = Field(default=256 * 1024, ge=1024)
    threadpool: int = 40  # threads that run the (synchronous) line requests at once
    # heavy work (runs, forks, sessions read back from the database) running at once: one a core
    heavy_workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)
    # heavy work that may wait for a free worker (first come, first served); beyond it a 503
    # with Retry-After. Deep enough that a whole class forking one lecture at once all get in.
    heavy_queue: int = Field(default=1000, ge=0)
    # gc.set_threshold(g0, g1, g2) as "g0,g1,g2"; empty: Python's (700, 10, 10). A request
    # leaves few objects behind, so Python's 700 collects the young ones every few dozen lines
    # and the whole heap (300 sessions' logs) every minute or so; 10 000 cut the collector's
    # CPU 3.5x and its longest pause from 41 to 12 ms in 300 sessions x 60 lines (measured:
    # docs/measured.md#the-garbage-collector).
    gc_thresholds: str = "10000,20,20"
    lecture_hours: float = 4.0  # a lecture's join code stops working after this long
    lecture_keepalive: float = 15.0  # seconds between keep-alive comments on a lecture's events
    access_log: bool = False  # one line per request: 300 students make 300 lines a second
    # The path prefix a reverse proxy serves the app under ("/loop-stepper"); the proxy strips
    # it before passing the request on, and the app puts it back into the URLs it makes.
    root_path: str = ""
    # Proxies whose X-Forwarded-For/-Proto are believed (comma-separated IPs or networks, "*"
    # for any). Empty: none, since in a container every student can appear to come from
    # 127.0.0.1 and could then claim any address or scheme.
    forwarded_allow_ips: str = ""
    # Origins allowed to show the page in an iframe (CSP frame-ancestors, space-separated,
    # e.g. "https://moodle.school.edu https://*.instructure.com"). Empty: no framing at all.
    frame_ancestors: str = ""
    # A name for this process sent back as X-Served-By on every response (e.g. the host or
    # container name behind a load balancer: which process answered). Empty: no header.
    served_by: str = ""
    # LTI 1.3 (issue 30): a JSON file of the platforms the tool trusts, in PyLTI1p3's
    # tool-config format (docs/deploy.md#in-an-lms-lti-13). Empty, and no platform registered
    # dynamically: LTI is off and every /lti route answers 404.
    lti_config: str = ""
    # A PEM file of the tool's RSA private key. Empty: a key made at first start, kept in the
    # database (every process sharing the database signs with the same one).
    lti_key: str = ""
    # LTI dynamic registration's secret: a platform registers at
    # /lti/register?key=<this secret> (docs/deploy.md#in-an-lms-lti-13). Empty: dynamic
    # registration is off (404). Set, LTI is on even before any platform is registered.
    lti_registration_key: str = ""
    templates_dir: Path = ROOT / "templates"
    static_dir: Path = ROOT / "static"

    @field_validator("root_path")
    @classmethod
    def _root_path(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and (not value.startswith("/") or not re.fullmatch(r"[A-Za-z0-9/._~-]+", value)):
            raise ValueError("root_path is a URL path such as /loop-stepper")
        return value

    @field_validator("served_by")
    @classmethod
    def _served_by(cls, value: str) -> str:
        if value and not re.fullmatch(r"[A-Za-z0-9._:-]{1,64}", value):
            raise ValueError("served_by is a short name: letters, digits, . _ : -")
        return value

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("database_url is a postgresql:// URL (empty: SQLite in data)")
        return value

    @field_validator("frame_ancestors")
    @classmethod
    def _frame_ancestors(cls, value: str) -> str:
        sources = value.split()
        bad = [s for s in sources if not _SOURCE.fullmatch(s.lower())]
        if bad:
            raise ValueError(
                f"frame_ancestors takes origins separated by spaces (https://lms.school.edu); "
                f"not {bad[0]!r}"
            )
        return " ".join(sources)

    @field_validator("gc_thresholds")
    @classmethod
    def _gc_thresholds(cls, value: str) -> str:
        value = value.replace(" ", "")
        if value and not re.fullmatch(r"\d{1,9}(,\d{1,9}){0,2}", value):
            raise ValueError("gc_thresholds is up to three whole numbers: 10000,20,20")
        return value
