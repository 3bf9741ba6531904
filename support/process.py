"""The server as an instructor starts it (``python -m app.cli``), in a process of its own:
``bench/spawn.py``, shared by the load test and the benchmarks (which import nothing of tests)."""

from __future__ import annotations

from support.process import ROOT, rss_kib, server_process, stop

__all__ = ["ROOT", "rss_kib", "server_process", "stop"]
