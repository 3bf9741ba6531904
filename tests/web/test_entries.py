"""One table of loop entries (app/engine/entries.py): the page, the schema, the effects, the
export and the Lab's dispatch all hold exactly its entries, read off it."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any, get_args

import httpx
import pytest

from app.engine.amp import AmpSpec
from app.engine.effects import EFFECTS
from app.engine.entries import ENTRIES, PLAIN, Entry, Style
from app.engine.lab import Lab
from app.engine.optimizers import PLAIN_SGD, SchedulerSpec
from app.engine.program import PRESETS, Toggles, program_for, with_scaler
from app.engine.setup import Setup
from app.export.units import EXPORTABLE, UNITS, WRITERS
from app.web import schemas
from support.oracle import Plain

NAMES = list(ENTRIES)
CATALOGUE = re.compile(r'<script type="application/json" id="catalogue">(.*?)</script>', re.S)


def rendered(client: httpx.Client, path: str) -> dict[str, Any]:
    """The catalogue the server rendered into a page, as the page's script parses it."""
    page = client.get(path)
    assert page.status_code == 200
    found = CATALOGUE.search(page.text)
    assert found, f"no #catalogue block in {path}"
    # Jinja's tojson escapes <, >, & and ' as \u escapes: JSON reads them back, no HTML unescape
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_the_page_the_schema_the_effects_and_the_export_hold_the_tables_entries(
    client: httpx.Client,
) -> None:
    page = [e["name"] for e in rendered(client, "/")["entries"]]
    assert page == NAMES  # the "Add line" menu's order too
    assert list(get_args(schemas.Entry)) == NAMES
    openapi = client.get("/openapi.json").json()
    program = openapi["components"]["schemas"]["PresetOut"]["properties"]["program"]
    assert program["items"]["enum"] == NAMES  # what /docs shows a client
    assert set(EFFECTS) == set(NAMES)
    assert set(UNITS) == set(NAMES) == set(EXPORTABLE)
    assert len(NAMES) == 17


@pytest.mark.parametrize("path", ["/", "/join", "/l/ABC123"])
def test_every_page_gets_the_same_table(client: httpx.Client, path: str) -> None:
    """The follow page draws the code panel too: it reads the same comments."""
    entries = rendered(client, path)["entries"]
    assert [e["name"] for e in entries] == NAMES
    for e, row in zip(entries, ENTRIES.values(), strict=True):
        assert e == {
            "name": row.name,
            "method": row.method,
            "arguments": row.kwargs,
            "python": row.code(),
            "comment": row.comment,
            "reads": list(row.reads),
            "writes": list(row.writes),
        }


def test_the_page_gets_each_entrys_python_exactly() -> None:
    """The texts the "Add line" menu shows; the ones it once showed empty among them."""
    python = {name: e.code() for name, e in ENTRIES.items()}
    assert python == {
        "forward": "out = model(X)",
        "loss": "loss = loss_fn(out, y)",
        "zero_grad": "optimizer.zero_grad()",
        "zero_grad(set_to_none=False)": "optimizer.zero_grad(set_to_none=False)",
        "backward": "loss.backward()",
        "backward(retain_graph=True)": "loss.backward(retain_graph=True)",
        "step": "optimizer.step()",
        "clip_grad_norm": "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)",
        "scheduler_step": "scheduler.step()",
        "train": "model.train()",
        "eval": "model.eval()",
        "log_item": "running_loss += loss.item()",
        "log_tensor": "running_loss += loss",
        "checkpoint": 'ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}',
        "checkpoint(model_only=True)": 'ckpt = {"model": model.state_dict()}',
        "resume": "model, optimizer = fresh(ckpt)  # new model and optimizer, then "
        "load_state_dict of what ckpt holds",
        "scaler_update": "scaler.update()",
    }


def test_a_sessions_style_rewrites_the_lines_that_depend_on_it() -> None:
    style = Style(accumulate=2, max_norm=0.5, softmax=True, amp="float16", scaler=True)
    autocast = 'with torch.autocast("cpu", dtype=torch.float16): '
    assert ENTRIES["forward"].code(style) == autocast + "out = model(X)"
    assert ENTRIES["loss"].code(style) == autocast + "loss = loss_fn(out.softmax(dim=1), y) / 2"
    assert ENTRIES["backward(retain_graph=True)"].code(style) == (
        "scaler.scale(loss).backward(retain_graph=True)"
    )
    assert ENTRIES["step"].code(style) == "scaler.step(optimizer)"
    assert ENTRIES["clip_grad_norm"].code(style) == (
        "scaler.unscale_(optimizer); "
        "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)"
    )
    assert ENTRIES["checkpoint"].code(style).endswith('"scaler": scaler.state_dict()}')
    assert ENTRIES["checkpoint(model_only=True)"].code(style) == (
        'ckpt = {"model": model.state_dict()}'
    )
    assert ENTRIES["train"].code(style) == "model.train()"


# what a session needs for an entry to run at all (the Lab refuses it otherwise): its setup,
# and the lines before it (scaler.update() needs a step that recorded its inf checks; the
# scheduler after the optimizer's step, or PyTorch warns)
BEFORE = ("forward", "loss", "backward(retain_graph=True)", "checkpoint")
STEP_LR: dict[str, Any] = {"kind": "step", "step_size": 1, "gamma": 0.5}
# the entry: (the Lab's setup, the oracle's, the lines before it)
NEEDS: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {
    "scheduler_step": ({"scheduler": SchedulerSpec(**STEP_LR)}, {"scheduler": STEP_LR}, ("step",)),
    "scaler_update": ({"amp": AmpSpec("float16")}, {"amp": "float16"}, ("step",)),
}


@pytest.mark.parametrize("entry", ENTRIES.values(), ids=NAMES)
def test_each_row_is_whole(entry: Entry) -> None:
    """A Lab method that takes its arguments, one way to write it, an export unit, stores the
    contract names, and the oracle runs it."""
    method = getattr(Lab, entry.method)
    inspect.signature(method).bind(None, **entry.kwargs)  # TypeError if it does not take them
    assert (entry.python == "") != (entry.write is None)
    assert entry.code(PLAIN)
    assert entry.unit in WRITERS
    assert set(entry.reads) | set(entry.writes) <= set(get_args(schemas.Store))
    assert entry.comment == "" or entry.comment.startswith("# ")
    _, setup, more = NEEDS.get(entry.name, ({}, {}, ()))
    plain = Plain("neuron", 0.05, **setup)
    for before in (*BEFORE, *more):  # its inputs exist
        plain.line(before)
    plain.line(entry.name)  # ValueError for a line the oracle cannot run


def test_the_tables_stores_are_the_contracts() -> None:
    stores = {s for e in ENTRIES.values() for s in (*e.reads, *e.writes)}
    assert stores == set(get_args(schemas.Store))


@pytest.mark.parametrize("name", NAMES)
def test_the_lab_reports_what_the_table_says_an_entry_touches(name: str) -> None:
    """On the worked example (no buffers, plain SGD) ``last`` is the row's reads and writes
    (less buffers: the model has none), the stores the page's extras decide from."""
    setup, _, more = NEEDS.get(name, ({}, {}, ()))
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, **setup))
    for before in (*BEFORE, *more):
        lab.run_line(before)
    lab.run_line(name)
    entry = ENTRIES[name]
    assert lab.last is not None and lab.last["line"] == name
    assert lab.last["reads"] == [s for s in entry.reads if s != "buffers"]
    assert lab.last["writes"] == [s for s in entry.writes if s != "buffers"]


def test_the_page_gets_presets_scenarios_and_default_programs(client: httpx.Client) -> None:
    page = rendered(client, "/")
    api = client.get("/api/presets").json()
    assert [{k: v for k, v in p.items() if k != "scaled_program"} for p in page["presets"]] == api
    for p, preset in zip(page["presets"], PRESETS, strict=True):
        assert p["scaled_program"] == with_scaler(preset.program)
    assert page["scenarios"] == client.get("/api/scenarios").json()
    for d in page["defaults"]:
        toggles = Toggles(d["skip_zero_grad"], d["step_first"])
        assert d["program"] == program_for(toggles, d["accumulate"], d["scaler"])
    ks = {k for s in page["scenarios"] for k in s["accumulate"]}
    assert len(page["defaults"]) == 2 * 2 * len(ks) * 2
    assert page["max_program"] == 20
    # a default the page looks up: moons, 4 micro-batches, step first, with a GradScaler
    (d,) = [
        d
        for d in page["defaults"]
        if (d["skip_zero_grad"], d["step_first"], d["accumulate"], d["scaler"])
        == (False, True, 4, True)
    ]
    assert d["program"] == [
        "zero_grad",
        *["forward", "loss", "backward"] * 3,
        "forward",
        "loss",
        "step",
        "backward",
        "scaler_update",
    ]
