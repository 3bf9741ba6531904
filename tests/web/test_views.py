"""The engine's TypedDicts (app/engine/views.py) against the API's pydantic models: the same
keys at every level, and a key the engine may leave out (or set to None) one the model allows
out (or None). mypy checks the engine builds the TypedDicts; this checks they are the API's."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest
from pydantic import BaseModel

from app.engine.questions import QuestionView
from app.engine.views import OutputView, SessionView
from app.web.answers import Output, QuestionOut, SessionOut, TensorPage
from loop_stepper.stores.views import TensorPageView

# keys of a TypedDict that no model names: a lecture's followers get the class's poll
NOT_IN_THE_MODEL = {(SessionView, "prediction")}


def parts(annotation: Any) -> list[Any]:
    """Every type an annotation is made of (the members of a union, a list's items...)."""
    found = [annotation]
    for arg in get_args(annotation):
        found += parts(arg)
    return found


def nullable(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)


def agree(view: Any, model: type[BaseModel], path: str) -> None:
    hints = get_type_hints(view)
    keys = {k for k in hints if (view, k) not in NOT_IN_THE_MODEL}
    fields = model.model_fields
    assert keys == set(fields), path
    for key in keys:
        field = fields[key]
        where = f"{path}.{key}"
        if key in view.__optional_keys__ or field.is_required():
            # a key the engine may leave out the model must allow out, and the reverse
            assert (key in view.__optional_keys__) != field.is_required(), where
        if nullable(hints[key]):
            assert nullable(field.annotation), where
        views = [t for t in parts(hints[key]) if is_typeddict(t)]
        models = [
            t for t in parts(field.annotation) if isinstance(t, type) and issubclass(t, BaseModel)
        ]
        if not models:  # a plain dict in the model (the neuron's line): any keys
            continue
        assert len(views) == len(models), where
        for inner, inner_model in zip(views, models, strict=True):
            agree(inner, inner_model, where)


@pytest.mark.parametrize(
    ("view", "model"),
    [
        (SessionView, SessionOut),
        (OutputView, Output),
        (QuestionView, QuestionOut),
        (TensorPageView, TensorPage),
    ],
)
def test_the_engines_types_are_the_apis(view: Any, model: type[BaseModel]) -> None:
    agree(view, model, model.__name__)
