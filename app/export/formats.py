"""The two formats: a standalone script, and the same as a Jupyter notebook."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from typing import Any

from app.export.setup import ScriptPlan, SetupFields, Unsupported, _session
from app.export.units import Event, Loop, Piece, Unit, _fold, _render, _State, _units


def _result(loss: bool) -> list[str]:
    """The final line of output: the four stores' numbers as exact JSON."""
    return [
        "def plain(x):",
        '    """JSON has no NaN or infinities: spell them as strings, as the Lab\'s API does."""',
        "    if isinstance(x, list):",
        "        return [plain(v) for v in x]",
        "    if isinstance(x, float) and not math.isfinite(x):",
        '        return "NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity"',
        "    return x",
        "",
        "",
        "params = [",
        "    {",
        '        "name": name,',
        '        "value": plain(p.detach().tolist()),',
        '        "grad": None if p.grad is None else plain(p.grad.tolist()),',
        "    }",
        "    for name, p in model.named_parameters()",
        "]",
        "last_loss = " + ("plain(loss.item())" if loss else "None  # no loss line ran"),
        'print(json.dumps({"params": params, "loss": last_loss}, allow_nan=False))',
    ]


def _build(
    setup: SetupFields, events: list[Event], threads: int
) -> tuple[ScriptPlan, list[Piece], _State]:
    """Raises ValueError for a log that does not fit the format (or could not have run)."""
    try:
        session = _session(setup, threads)
        state = _State()
        pieces = _fold(_units(session, list(events), state))
        if state.logged:
            session = replace(session, setup=(*session.setup, "running_loss = 0.0"))
        if state.copies and "import copy" not in session.setup:
            session = replace(session, setup=("import copy", *session.setup))
    except Unsupported:
        raise
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"not a session log: {error!r}") from error
    return session, pieces, state


def _summary(session: ScriptPlan, pieces: list[Piece], state: _State) -> list[str]:
    """What the session was, a paragraph each."""
    loops = sum(isinstance(p, Loop) for p in pieces)
    folded = f"; repeats are folded into {loops} for loop(s)" if loops else ""
    return [
        *session.summary,
        f"The session ran {state.lines} lines ({state.forwards} forward passes, "
        f"{state.failed} failed){folded}.",
        "The last line printed is JSON: every parameter's value and .grad and the last loss, "
        'as exact floats (non-finite ones as "NaN", "Infinity", "-Infinity").',
    ]


# -- the two formats --------------------------------------------------------------


def script(setup: SetupFields, events: list[Event], *, threads: int) -> str:
    """A standalone Python script that runs the session again in plain PyTorch.

    ``threads``: the intra-op thread count the session's numbers were computed with (the
    server's ``torch.get_num_threads()``); the script sets the same, whatever its machine.
    """
    session, pieces, state = _build(setup, events, threads)
    header = [f"# {session.title}, exported as plain PyTorch.", "#"]
    for paragraph in _summary(session, pieces, state):
        wrapped = textwrap.wrap(paragraph, 90, subsequent_indent="  ", break_on_hyphens=False)
        header += [f"# {line}" for line in wrapped]
    body: list[str] = []
    for piece in pieces:
        body += _render(piece)
    lines = [*header, "", *session.setup, "", "# -- the session, line by line --", "", *body]
    lines += ["", "", "# -- where it ended --", *_result(state.loss)]
    return "\n".join(lines) + "\n"


def _cell(index: int, kind: str, lines: list[str]) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "cell_type": kind,
        "id": f"cell-{index}",
        "metadata": {},
        "source": "\n".join(lines),
    }
    if kind == "code":
        cell |= {"execution_count": None, "outputs": []}
    return cell


def notebook(setup: SetupFields, events: list[Event], *, threads: int) -> dict[str, Any]:
    """The same as a Jupyter notebook (nbformat 4): title, setup, one cell per line or loop."""
    session, pieces, state = _build(setup, events, threads)
    title = [f"# {session.title}"]
    for paragraph in _summary(session, pieces, state):
        title += ["", paragraph]
    cells = [_cell(0, "markdown", title), _cell(1, "code", list(session.setup))]
    for piece in pieces:
        if isinstance(piece, Unit) and piece.markdown:
            cells.append(_cell(len(cells), "markdown", [piece.markdown]))
        else:
            cells.append(_cell(len(cells), "code", _render(piece)))
    cells.append(_cell(len(cells), "code", _result(state.loss)))
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "cells": cells,
    }
