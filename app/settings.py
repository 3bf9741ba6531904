"""Server settings, read from the environment (prefix ``LOOP_STEPPER_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOOP_STEPPER_")

    host: str = "127.0.0.1"
    port: int = 8000
    max_sessions: int = 1000  # live sessions at once; a new one past this is a 503
    idle_timeout: float = 1800.0  # seconds without a request before a session may go
    torch_threads: int = 1  # many tiny models on few cores: one intra-op thread each
    evict_interval: float = 30.0  # seconds between sweeps that drop idle sessions
    max_body: int = 16 * 1024  # bytes; a larger request body is a 413 (valid ones are < 1 KB)
    threadpool: int = 40  # threads that run the (synchronous) line requests at once
    access_log: bool = False  # one line per request: 300 students make 300 lines a second
    templates_dir: Path = ROOT / "templates"
    static_dir: Path = ROOT / "static"
