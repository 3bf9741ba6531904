"""The user's own code besides the recorded source: what else ``record`` traces statement by
statement, and how a moment inside it names its file.

Code is the user's when it was written in the notebook — an earlier cell, whose code lives in
``linecache`` under the name IPython compiled it with (plain IPython: ``<ipython-input-N-…>``;
ipykernel: ``/tmp/ipykernel_<pid>/<hash>.py``, no file behind it), or an earlier ``%%step``
(``<loop-stepper-N>``) — or when the namespace holds a function, a class or an instance of a
class from a file of the user's (``record(source, globals())`` from a script: its ``train``).
Never PyTorch's, the standard library's, an installed package's or this project's own files,
nor generated code (``<string>``, ``<attrs generated …>``). Each file is parsed once
(``Source.parse``, remembered by name and text); a file whose text does not parse is not traced.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from loop_stepper.recorder.source import Source

# the folders of the code that runs inside the user's: PyTorch's and this package's
INSIDE = (
    str(Path(torch.__file__).resolve().parent) + os.sep,
    str(Path(__file__).resolve().parent.parent) + os.sep,  # loop_stepper
)
# the folders whose code is never the user's: PyTorch's, this package's, the standard library's
# and the installed packages' (also the doctor's test of whose a frame is, doctor/where.py)
NOT_THEIRS = tuple(
    {
        *INSIDE,
        *(
            str(Path(p).resolve()) + os.sep
            for k in ("stdlib", "platstdlib", "purelib", "platlib")
            if (p := sysconfig.get_paths().get(k))
        ),
    }
)
_CELLS = ("<ipython-input-", "<loop-stepper-")  # the names IPython and record compile cells under
_INPUT = re.compile(r"<ipython-input-(\d+)-")
_parsed: dict[str, tuple[str, Source | None]] = {}  # file name -> its text and statements


class UserFiles:
    """The files of the user's code that one recording traces (besides the source itself),
    decided once per file name: ``source_of`` answers its statements, or None for code that
    runs untraced."""

    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self.held = held_files(namespace)
        self.known: dict[str, Source | None] = {}

    def source_of(self, filename: str) -> Source | None:
        if filename in self.known:
            return self.known[filename]
        theirs = is_cell(filename) or (filename in self.held and is_written_by_user(filename))
        source = parsed(filename) if theirs else None
        self.known[filename] = source
        return source

    def texts(self, names: set[str]) -> dict[str, str]:
        """The text of each file in ``names`` (for the trace's ``sources``): the user's, or a
        library's its moments are in."""
        return {n: s.text for n in sorted(names) if (s := self.known.get(n) or parsed(n))}


def is_written_by_user(filename: str) -> bool:
    """Not PyTorch's, the standard library's, an installed package's (this environment's, or
    any under a ``site-packages`` or ``dist-packages`` folder: a user's site, Colab's) or this
    project's, and not generated code (a ``<…>`` name other than a cell's)."""
    if filename.startswith("<"):
        return filename.startswith(_CELLS)
    path = os.path.realpath(filename)
    parts = path.split(os.sep)
    packaged = "site-packages" in parts or "dist-packages" in parts
    return not packaged and not path.startswith(NOT_THEIRS)


def is_cell(filename: str) -> bool:
    """A notebook cell's code: IPython's and record's names, or a path ``linecache`` holds
    without a modification time (a cell's entry, never a file read from disk) that is not an
    installed package's."""
    if filename.startswith("<"):
        return filename.startswith(_CELLS) and filename in linecache.cache
    entry = linecache.cache.get(filename)
    return (
        entry is not None and len(entry) == 4 and entry[1] is None and is_written_by_user(filename)
    )


def held_files(namespace: Mapping[str, Any]) -> set[str]:
    """The files of the functions, classes and instances' classes ``namespace`` holds."""
    files: set[str] = set()
    classes: set[type] = set()
    for value in list(namespace.values()):
        if isinstance(value, types.MethodType):  # a bound method: its function
            value = value.__func__
        if isinstance(value, types.FunctionType):
            files.add(value.__code__.co_filename)
            continue
        kind = value if isinstance(value, type) else type(value)
        if kind in classes or kind.__module__ == "builtins":
            continue
        classes.add(kind)
        for member in vars(kind).values():
            function = getattr(member, "__func__", member)
            if isinstance(function, types.FunctionType):
                files.add(function.__code__.co_filename)
    return files


def parsed(filename: str) -> Source | None:
    """``filename``'s statements, parsed once per text; None when it has no text or does not
    parse (it then runs untraced)."""
    text = "".join(linecache.getlines(filename))
    kept = _parsed.get(filename)
    if kept is not None and kept[0] == text:
        return kept[1]
    try:
        source: Source | None = Source.parse(text) if text else None
    except (SyntaxError, ValueError):
        source = None
    _parsed[filename] = (text, source)
    return source


def title(filename: str) -> str:
    """How the user knows a file: a cell by its input number (``In [3]``) where IPython says
    it, else the file's own name."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    number = getattr(getattr(shell, "compile", None), "_filename_map", {}).get(filename)
    if number is None and (match := _INPUT.match(filename)):
        number = int(match.group(1))
    if number:
        return f"In [{number}]"
    return filename if filename.startswith("<") else os.path.basename(filename)
