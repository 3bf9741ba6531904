"""A short soak (issue 27 item 5; the long one is ``bench/soak.py``): a class clicking, making
sessions, forking a lecture and stepping back against a real server for half a minute, idle
sessions swept after seconds. Memory, open files and threads stay flat after the warm-up, the
database is swept as LOOP_STEPPER_RETAIN_DAYS says, and nothing fails."""

from __future__ import annotations

import asyncio
import tempfile

from bench.server import server
from bench.soak import soak, verdict

RETAIN = 8.0  # seconds idle before a session is swept from the database


def test_a_short_soak_stays_flat_and_sweeps() -> None:
    with tempfile.TemporaryDirectory() as data:
        extra = {
            "LOOP_STEPPER_RETAIN_DAYS": str(RETAIN / 86400),
            "LOOP_STEPPER_SWEEP_INTERVAL": "3",
            "LOOP_STEPPER_IDLE_TIMEOUT": str(RETAIN),
            "LOOP_STEPPER_EVICT_INTERVAL": "3",
        }
        with server(data, extra) as (url, pid):
            samples, school = asyncio.run(soak(url, pid, data, 15, 30.0, 5.0, 10**9))
    v = verdict(samples, school)
    assert school.errors == 0, school.refusals
    assert school.clicks > 15 * 20  # about one a second each
    assert v.files_growth <= 20 and v.threads_growth <= 4, samples
    assert v.rss_growth <= 0.5, samples  # generous: a short run still allocates as it warms
    # sessions left idle (a student's old one after a new one) were swept: fewer in the db
    assert v.swept and samples[-1].sessions < school.created, (samples[-1], school.created)
