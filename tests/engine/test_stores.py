"""One function draws the stores (``stores.view``): a Lab's Session and a notebook's recorded
moment of the same loop are the same JSON, number for number."""

from __future__ import annotations

from typing import Any

from app.engine import Lab
from app.engine.optimizers import PLAIN_SGD
from app.engine.setup import Setup
from loop_stepper import stores
from loop_stepper.recorder import record
from tests.recorder.test_record import LOOP_LINES, worked


def test_a_sessions_stores_are_stores_view_of_its_lab() -> None:
    lab = Lab(Setup("moons", 0.1, 0, PLAIN_SGD))
    lab.run(2)
    session, drawn = lab.view(), stores.view(lab)
    assert {k: session[k] for k in drawn} == drawn  # type: ignore[literal-required]


def without_names(view: Any) -> Any:
    """A store's JSON with the parameters' names dropped: the Lab says ``weight``, the
    user's loop ``model.weight``."""
    return {
        "params": [{k: v for k, v in p.items() if k != "name"} for p in view["params"]],
        "loss": view["loss"],
        "graph": {
            **view["graph"],
            "nodes": [
                {**n, "label": n["label"].replace("model.", "")} for n in view["graph"]["nodes"]
            ],
            "out_dtype": None,
        },
    }


def test_the_page_and_the_widget_draw_the_same_numbers() -> None:
    """The worked example as the stepper runs it (the neuron scenario) and as a user writes it
    in a %%step cell: after each of the five lines of both iterations, the same stores."""
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    page = []
    for _ in range(2):
        for entry in ("forward", "loss", "zero_grad", "backward", "step"):
            lab.run_line(entry)
            page.append(without_names(stores.view(lab)))
    widget = [without_names(m) for m in record(worked()).moments if m["line"] in LOOP_LINES]
    assert widget == page
