"""Light work first: a student's click is answered before a hog's next line.

A run of 1000 iterations in a worker thread and a click on the event loop share one
interpreter. CPython hands the interpreter from a busy thread to a waiting one only every
switch interval (5 ms), and a request waits for it after each of its socket and database calls:
twenty hogs made a click's p99 five times its idle p99. Heavy work (a run's lines, the keyframe
writer) therefore calls ``pause`` between its lines: while a light request is being answered it
lets go of the interpreter until the answer has started, for at most ``longest`` seconds at a
time (heavy work slows down under light load, it never stops).

The counting runs on the event loop's thread (the web layer's middleware); ``pause`` may be
called from any thread.
"""

from __future__ import annotations

import threading

LONGEST = 0.05  # seconds heavy work waits at once for the light work to end


class Priority:
    def __init__(self, longest: float = LONGEST) -> None:
        self.longest = longest
        self.light = 0  # light requests being answered (the event loop's thread only)
        self._quiet = threading.Event()
        self._quiet.set()

    def begin(self) -> None:
        """A light request has come in."""
        self.light += 1
        if self.light == 1:
            self._quiet.clear()

    def end(self) -> None:
        """Its answer has started (or it turned heavy)."""
        self.light -= 1
        if self.light == 0:
            self._quiet.set()

    def pause(self) -> None:
        """Between two lines of heavy work: wait while light work is being answered."""
        self._quiet.wait(self.longest)
