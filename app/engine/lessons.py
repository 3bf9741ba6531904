"""A prepared lesson (issue 29) as data: its document checked with a JSON pointer per error,
its walk as a session carries it, and its claims checked against a live Lab.

A lesson is a JSON document (``"format": "loop-stepper-lesson/1"``, the schema at
``GET /api/lessons/schema``): a title, a summary, the setup (a ``POST /api/sessions`` body, which
the web layer checks), and stops at moments, each with a note, a question, a vote and the claims
(``expect``) it makes about the session there. Nothing here renders Markdown (the page does,
safely) or runs anything a user wrote.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypedDict

import torch

FORMAT = "loop-stepper-lesson/1"
MAX_STOPS = 100
MAX_AT = 10_000  # a stop's moment: lines run since the start
MAX_NOTE = 20_000  # characters of a note or a summary
MAX_TITLE = 200
MAX_CHOICES = 10
DEFAULT_TOLERANCE = 1e-6  # a claim holds when |actual - expected| <= tolerance (1 + |expected|)
CHANGE_KEYS = ("lr", "max_norm", "program", "skip_zero_grad", "step_first")

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "loop-stepper-lesson/1",
    "title": "A Loop Stepper lesson",
    "type": "object",
    "required": ["format", "title", "summary", "setup", "stops"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE},
        "summary": {"type": "string", "maxLength": MAX_NOTE, "description": "Markdown"},
        "authors": {"type": "array", "items": {"type": "string", "maxLength": MAX_TITLE}},
        "setup": {"type": "object", "description": "a POST /api/sessions body"},
        "program": {"type": "array", "items": {"type": "string"}},
        "stops": {
            "type": "array",
            "maxItems": MAX_STOPS,
            "description": "in order: each stop's `at` greater than the one before",
            "items": {
                "type": "object",
                "required": ["at", "title"],
                "additionalProperties": False,
                "properties": {
                    "at": {"type": "integer", "minimum": 0, "maximum": MAX_AT},
                    "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE},
                    "note": {"type": ["string", "null"], "maxLength": MAX_NOTE},
                    "question": {
                        "oneOf": [
                            {"type": "null"},
                            {"const": "auto"},
                            {
                                "type": "object",
                                "required": ["prompt", "choices"],
                                "additionalProperties": False,
                                "properties": {
                                    "prompt": {"type": "string", "minLength": 1},
                                    "multiple": {"type": "boolean"},
                                    "choices": {
                                        "type": "array",
                                        "minItems": 2,
                                        "maxItems": MAX_CHOICES,
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "text", "correct"],
                                            "additionalProperties": False,
                                            "properties": {
                                                "id": {"type": "string", "minLength": 1},
                                                "text": {"type": "string", "minLength": 1},
                                                "correct": {"type": "boolean"},
                                                "feedback": {"type": "string"},
                                            },
                                        },
                                    },
                                },
                            },
                        ]
                    },
                    "vote": {"type": "boolean"},
                    "change": {
                        "type": "object",
                        "description": "the same body as PATCH /api/sessions/{id}",
                        "propertyNames": {"enum": list(CHANGE_KEYS)},
                    },
                    "expect": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "params": {"type": "object"},
                            "grad": {"type": "object"},
                            "loss": {"type": "number"},
                            "raises": {"type": "string"},
                            "tolerance": {"type": "number", "minimum": 0},
                        },
                    },
                },
            },
        },
    },
}


class LessonProblem(TypedDict):
    pointer: str
    msg: str


class LessonRefused(ValueError):
    """A lesson document with problems: a 422 listing each with its JSON pointer."""

    def __init__(self, problems: list[LessonProblem]) -> None:
        super().__init__("; ".join(f"{p['pointer']}: {p['msg']}" for p in problems))
        self.problems = problems


def refused_detail(error: LessonRefused) -> list[dict[str, Any]]:
    """The 422's detail: FastAPI's shape (``loc`` the pointer's parts) with the pointer."""
    return [
        {
            "loc": ["body", *[int(p) if p.isdigit() else p for p in e["pointer"].split("/") if p]],
            "pointer": e["pointer"],
            "msg": e["msg"],
            "type": "lesson",
        }
        for e in error.problems
    ]


def _string(
    doc: dict[str, Any],
    key: str,
    where: str,
    problems: list[LessonProblem],
    *,
    required: bool = True,
    limit: int = MAX_TITLE,
    empty: bool = False,
) -> None:
    if key not in doc:
        if required:
            problems.append({"pointer": f"{where}/{key}", "msg": "is required"})
        return
    value = doc[key]
    if value is None and not required:
        return
    if not isinstance(value, str):
        problems.append({"pointer": f"{where}/{key}", "msg": "must be a string"})
    elif len(value) > limit:
        problems.append({"pointer": f"{where}/{key}", "msg": f"must be at most {limit} characters"})
    elif not value.strip() and not empty:
        problems.append({"pointer": f"{where}/{key}", "msg": "must not be empty"})


def validate(doc: Any) -> list[LessonProblem]:
    """Every problem of a lesson document but its setup's (the web layer checks that as a
    ``POST /api/sessions`` body), each with its JSON pointer."""
    if not isinstance(doc, dict):
        return [{"pointer": "", "msg": "must be an object (a lesson document)"}]
    problems: list[LessonProblem] = []
    known = set(SCHEMA["properties"])
    for key in doc:
        if key not in known:
            problems.append({"pointer": f"/{key}", "msg": "is not a field of a lesson"})
    if doc.get("format") != FORMAT:
        problems.append({"pointer": "/format", "msg": f"must be {FORMAT!r}"})
    _string(doc, "title", "", problems)
    _string(doc, "summary", "", problems, limit=MAX_NOTE, empty=True)
    authors = doc.get("authors", [])
    if not isinstance(authors, list) or not all(isinstance(a, str) for a in authors):
        problems.append({"pointer": "/authors", "msg": "must be a list of names"})
    if not isinstance(doc.get("setup"), dict):
        problems.append(
            {"pointer": "/setup", "msg": "must be an object: a POST /api/sessions body"}
        )
    stops = doc.get("stops")
    if not isinstance(stops, list):
        problems.append({"pointer": "/stops", "msg": "must be a list"})
        return problems
    if len(stops) > MAX_STOPS:
        problems.append({"pointer": "/stops", "msg": f"must have at most {MAX_STOPS} stops"})
    before: int | None = None
    for i, stop in enumerate(stops[:MAX_STOPS]):
        where = f"/stops/{i}"
        if not isinstance(stop, dict):
            problems.append({"pointer": where, "msg": "must be an object"})
            continue
        for key in stop:
            if key not in SCHEMA["properties"]["stops"]["items"]["properties"]:
                problems.append({"pointer": f"{where}/{key}", "msg": "is not a field of a stop"})
        at = stop.get("at")
        if not isinstance(at, int) or isinstance(at, bool):
            problems.append({"pointer": f"{where}/at", "msg": "must be an integer (a moment)"})
        elif not 0 <= at <= MAX_AT:
            problems.append({"pointer": f"{where}/at", "msg": f"must be from 0 to {MAX_AT}"})
        else:
            if before is not None and at <= before:
                problems.append({"pointer": f"{where}/at", "msg": f"must be greater than {before}"})
            before = at
        _string(stop, "title", where, problems)
        _string(stop, "note", where, problems, required=False, limit=MAX_NOTE, empty=True)
        if not isinstance(stop.get("vote", False), bool):
            problems.append({"pointer": f"{where}/vote", "msg": "must be true or false"})
        problems += _question(stop.get("question"), f"{where}/question")
        problems += _expect(stop.get("expect", {}), f"{where}/expect")
        change = stop.get("change", {})
        if not isinstance(change, dict):
            problems.append({"pointer": f"{where}/change", "msg": "must be an object"})
        else:
            for key in change:
                if key not in CHANGE_KEYS:
                    problems.append({
                        "pointer": f"{where}/change/{key}",
                        "msg": f"is not a change (one of {', '.join(CHANGE_KEYS)})",
                    })  # fmt: skip
    return problems


def _question(question: Any, where: str) -> list[LessonProblem]:
    if question is None or question == "auto":
        return []
    if not isinstance(question, dict):
        return [{"pointer": where, "msg": 'must be null, "auto" or a question with choices'}]
    problems: list[LessonProblem] = []
    _string(question, "prompt", where, problems, limit=MAX_NOTE)
    for key in question:
        if key not in ("prompt", "choices", "multiple"):
            problems.append({"pointer": f"{where}/{key}", "msg": "is not a field of a question"})
    if not isinstance(question.get("multiple", False), bool):
        problems.append({"pointer": f"{where}/multiple", "msg": "must be true or false"})
    choices = question.get("choices")
    if not isinstance(choices, list) or not 2 <= len(choices) <= MAX_CHOICES:
        problems.append(
            {"pointer": f"{where}/choices", "msg": f"must be 2 to {MAX_CHOICES} choices"}
        )
        return problems
    ids: set[str] = set()
    right = 0
    for i, choice in enumerate(choices):
        at = f"{where}/choices/{i}"
        if not isinstance(choice, dict):
            problems.append({"pointer": at, "msg": "must be an object"})
            continue
        _string(choice, "id", at, problems, limit=50)
        _string(choice, "text", at, problems, limit=MAX_NOTE)
        _string(choice, "feedback", at, problems, required=False, limit=MAX_NOTE, empty=True)
        if not isinstance(choice.get("correct"), bool):
            problems.append({"pointer": f"{at}/correct", "msg": "must be true or false"})
        right += choice.get("correct") is True
        if isinstance(choice.get("id"), str):
            if choice["id"] in ids:
                problems.append({"pointer": f"{at}/id", "msg": "must differ from the others"})
            ids.add(choice["id"])
    if right == 0:
        problems.append({"pointer": f"{where}/choices", "msg": "must have a correct choice"})
    return problems


def _expect(expect: Any, where: str) -> list[LessonProblem]:
    if not isinstance(expect, dict):
        return [{"pointer": where, "msg": "must be an object of claims"}]
    problems: list[LessonProblem] = []
    for key, value in expect.items():
        at = f"{where}/{key}"
        if key in ("params", "grad"):
            if not isinstance(value, dict) or not all(_numbers(v) for v in value.values()):
                problems.append({"pointer": at, "msg": "must map a parameter's name to its values"})
        elif key == "loss":
            if not _finite(value):
                problems.append({"pointer": at, "msg": "must be a number"})
        elif key == "raises":
            if not isinstance(value, str) or not value:
                problems.append({"pointer": at, "msg": "must name an error (RuntimeError)"})
        elif key == "tolerance":
            if not _finite(value) or value < 0:
                problems.append({"pointer": at, "msg": "must be a number of 0 or more"})
        else:
            problems.append({"pointer": at, "msg": "is not a claim (params, grad, loss, raises)"})
    return problems


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _numbers(v: Any) -> bool:
    return _finite(v) or (isinstance(v, list) and len(v) <= 100_000 and all(map(_numbers, v)))


# -- claims ---------------------------------------------------------------------------


class Failure(TypedDict):
    claim: str
    expected: Any
    actual: Any


def _close(actual: Any, expected: Any, tolerance: float) -> bool:
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_close(a, e, tolerance) for a, e in zip(actual, expected, strict=True))
        )
    if not isinstance(actual, int | float) or isinstance(actual, bool):
        return False
    return abs(float(actual) - float(expected)) <= tolerance * (1 + abs(float(expected)))


def failures(
    expect: dict[str, Any], named: Mapping[str, torch.Tensor], loss: float | None
) -> list[Failure]:
    """The claims of ``expect`` (params, grad, loss) that do not hold on a Lab's parameters and
    loss, each with what PyTorch holds (``raises`` is the walk's: it runs the next line)."""
    tolerance = float(expect.get("tolerance", DEFAULT_TOLERANCE))
    found: list[Failure] = []
    for store in ("params", "grad"):
        for name, expected in expect.get(store, {}).items():
            param = named.get(name)
            tensor = (
                None if param is None else (param.detach() if store == "params" else param.grad)
            )
            actual = None if tensor is None else tensor.tolist()
            if actual is None or not _close(actual, expected, tolerance):
                found.append({"claim": f"{store}.{name}", "expected": expected, "actual": actual})
    if "loss" in expect and (loss is None or not _close(loss, expect["loss"], tolerance)):
        found.append({"claim": "loss", "expected": expect["loss"], "actual": loss})
    return found


def claims(
    named: Mapping[str, torch.Tensor], loss: float | None, largest: int = 256
) -> dict[str, Any]:
    """``expect`` of what a Lab holds now ("expect the current values" of the page's "Make a
    lesson"): every parameter and every ``.grad`` that is not None, of at most ``largest``
    elements, and the loss; only finite numbers (JSON has no NaN). ``failures`` of it is []."""
    said: dict[str, Any] = {"params": {}, "grad": {}}
    for name, param in named.items():
        for store, tensor in (("params", param.detach()), ("grad", param.grad)):
            if tensor is not None and tensor.numel() <= largest and bool(tensor.isfinite().all()):
                said[store][name] = tensor.tolist()
    if loss is not None and math.isfinite(loss):
        said["loss"] = loss
    return {k: v for k, v in said.items() if v != {}}


# -- the walk, as a session carries it ----------------------------------------------


def walk_of(lesson_id: str, doc: dict[str, Any]) -> dict[str, Any]:
    """What a session on a lesson keeps of it (in its setup): its id, title and stops."""
    keep = ("at", "title", "note", "question", "vote", "change")
    return {
        "id": lesson_id,
        "title": doc["title"],
        "stops": [{k: s[k] for k in keep if k in s} for s in doc["stops"]],
    }


def asked(question: Any) -> Any:
    """A stop's question as a student sees it: a custom one without which choice is correct."""
    if not isinstance(question, dict):
        return question
    return {
        "prompt": question["prompt"],
        "multiple": bool(question.get("multiple", False)),
        "choices": [{"id": c["id"], "text": c["text"]} for c in question["choices"]],
    }


def walk_view(walk: dict[str, Any], moment: int) -> dict[str, Any]:
    """The Session's ``lesson`` field at ``moment``: the stops, and the stop standing there."""
    stops = walk["stops"]
    here = next((i for i, s in enumerate(stops) if s["at"] == moment), None)
    stop = None if here is None else stops[here]
    return {
        "id": walk["id"],
        "title": walk["title"],
        "stops": [{"at": s["at"], "title": s["title"]} for s in stops],
        "stop": here,
        "note": None if stop is None else stop.get("note"),
        "question": None if stop is None else asked(stop.get("question")),
        "vote": False if stop is None else bool(stop.get("vote", False)),
    }
