"""Code that is neither the user's nor PyTorch's: a library's training loop (d2l's
``train_ch11``, its ``Trainer.fit``), a framework's step (accelerate's ``backward``,
Lightning's), the caller of the user's callbacks. It runs untraced, but what it changes is a
moment of its own, labelled with its file, line and statement (``d2l/torch.py:…:
l.backward()``), and a loop of its around the backward is the training loop whose passes are
the iterations (``passes.py``).

A frame is the library's when its file is a real file that is not PyTorch's, this package's or
the standard library's, and not the user's code the recorder traces; its statements are read
once per file (``files.parsed``).
"""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loop_stepper.recorder.files import INSIDE, parsed
from loop_stepper.recorder.source import Source, Statement

# the standard library's folders (and not site-packages, which may lie inside them)
_STDLIB = tuple(
    {
        str(Path(p).resolve()) + os.sep
        for k in ("stdlib", "platstdlib")
        if (p := sysconfig.get_paths().get(k))
    }
)
_PACKAGES = tuple(
    {
        str(Path(p).resolve()) + os.sep
        for k in ("purelib", "platlib")
        if (p := sysconfig.get_paths().get(k))
    }
)
_known: dict[str, bool] = {}


def is_library(filename: str) -> bool:
    """A real file of code that is not PyTorch's, this package's or the standard library's
    (an installed package's, or a module of the user's own that the recorder does not trace)."""
    known = _known.get(filename)
    if known is None:
        if filename.startswith("<"):
            known = False
        else:
            path = os.path.realpath(filename)
            packaged = path.startswith(_PACKAGES) or _in_site_packages(path)
            known = not path.startswith(INSIDE) and (packaged or not path.startswith(_STDLIB))
        _known[filename] = known
    return known


def _in_site_packages(path: str) -> bool:
    parts = path.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts


def statement_at(frame: types.FrameType) -> tuple[Source | None, Statement]:
    """The statement a library frame runs now, and its file's statements (None where the file
    does not parse: the statement is then its line)."""
    filename, line = frame.f_code.co_filename, frame.f_lineno
    source = parsed(filename)
    statement = None if source is None else source.at_line.get(line)
    if statement is None:
        text = linecache.getline(filename, line).strip()
        statement = Statement(line, line, text, compound=False)
    return source, statement


Traced = Callable[[types.FrameType], Any]  # a frame's tracer state, None when untraced


def changed_in(start: types.FrameType | None, traced: Traced) -> types.FrameType | None:
    """The library frame a change heard now was made in: the innermost frame out from
    ``start`` that is not PyTorch's or this package's, when it is the library's and some frame
    further out is the user's (None: the user's own statement made it)."""
    frame = start
    while frame is not None and frame.f_code.co_filename.startswith(INSIDE):
        frame = frame.f_back
    if frame is None or traced(frame) is not None or not is_library(frame.f_code.co_filename):
        return None
    outer = frame.f_back
    while outer is not None and traced(outer) is None:
        outer = outer.f_back
    return frame if outer is not None else None


def looping(frame: types.FrameType | None, traced: Traced) -> bool:
    """A library frame from ``frame`` out to the user's runs inside a loop of its own (a
    library's training loop, not a wrapper of one call: ``accelerator.backward``)."""
    while frame is not None and traced(frame) is None:
        if is_library(frame.f_code.co_filename) and statement_at(frame)[1].loops:
            return True
        frame = frame.f_back
    return False


def title(filename: str) -> str:
    """A library file as its import names it: its path from the ``sys.path`` folder that
    holds it (``d2l/torch.py``), else its own name."""
    path = os.path.realpath(filename)
    best = ""
    for entry in sys.path:
        folder = os.path.realpath(entry or os.getcwd()) + os.sep
        if path.startswith(folder) and len(folder) > len(best):
            best = folder
    return path[len(best) :] if best else os.path.basename(path)
