"""Server settings, read from the environment (prefix ``LOOP_STEPPER_``)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent


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
    data: str = str(user_data())  # the store's folder (sessions.sqlite3); ":memory:" keeps none
    retain_days: float = 7.0  # a session idle this long is deleted from the store
    snapshot_days: float = 365.0  # how long a shared snapshot lives
    store_max_sessions: int = 20_000  # logs (sessions and snapshots) in the store
    store_max_bytes: int = 2 * 1024**3  # their events and checkpoints; oldest idle go first
    sweep_interval: float = 600.0  # seconds between the store's retention sweeps
    torch_threads: int = 1  # many tiny models on few cores: one intra-op thread each
    evict_interval: float = 30.0  # seconds between sweeps that drop idle sessions
    max_body: int = 16 * 1024  # bytes; a larger request body is a 413 (valid ones are < 1 KB)
    threadpool: int = 40  # threads that run the (synchronous) line requests at once
    access_log: bool = False  # one line per request: 300 students make 300 lines a second
    templates_dir: Path = ROOT / "templates"
    static_dir: Path = ROOT / "static"
