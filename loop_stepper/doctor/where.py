"""Where in the user's code a call was made: the innermost frame of their own files.

The user's own code is every file that is not PyTorch's, the standard library's, an installed
package's or this project's: a script, a notebook cell (``/tmp/ipykernel_…/….py``), a module of
their project. Asked once per file name and remembered.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator

from loop_stepper.recorder.files import NOT_THEIRS

_theirs: dict[str, bool] = {}

Place = tuple[str | None, int | None]  # the file and the 1-based line


def is_theirs(filename: str) -> bool:
    known = _theirs.get(filename)
    if known is None:
        if filename.startswith("<frozen") or filename.startswith("<string>"):
            known = False
        elif filename.startswith("<"):  # a cell of IPython or the recorder: the user's
            known = True
        else:
            resolved = os.path.realpath(filename)
            known = not resolved.startswith(NOT_THEIRS)
        _theirs[filename] = known
    return known


def shown(file: str | None) -> str:
    """A file as a report names it: relative to the working folder when it can be."""
    if file is None:
        return "<unknown>"
    try:
        return os.path.relpath(file)
    except ValueError:
        return file


def their_frames(depth: int = 1) -> Iterator[types.FrameType]:
    """The user's frames on the stack, innermost first."""
    frame: types.FrameType | None = sys._getframe(depth + 1)
    while frame is not None:
        if is_theirs(frame.f_code.co_filename):
            yield frame
        frame = frame.f_back


def place(depth: int = 1) -> Place:
    """The innermost line of the user's code on the stack (None, None when there is none)."""
    frame: types.FrameType | None = sys._getframe(depth + 1)
    while frame is not None:
        if is_theirs(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None, None
