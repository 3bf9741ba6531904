"""Where lessons come from: the built-in files (``builtin/NN-<slug>.lesson.json``, id the
slug, listed in the gallery) and the documents users wrote (the db, unlisted: reachable by
link). A user's lesson has an unguessable id and an edit token shown once; the db keeps only
the token's SHA-256."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from functools import cache
from pathlib import Path
from typing import Any, Protocol

BUILTIN = Path(__file__).resolve().parent / "builtin"
FILE = re.compile(r"^\d\d-([a-z0-9]+(?:-[a-z0-9]+)*)\.lesson\.json$")
ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class LessonSource(Protocol):
    def save_lesson(self, lesson_id: str, body: str, edit_hash: str) -> None: ...
    def lesson(self, lesson_id: str) -> tuple[str, str] | None: ...
    def update_lesson(self, lesson_id: str, body: str) -> None: ...
    def delete_lesson(self, lesson_id: str) -> None: ...


class NoLesson(LookupError):
    """No lesson by that id (a 404)."""


class NotYours(PermissionError):
    """An edit without the lesson's edit token, or with a wrong one (a 403)."""


@cache
def builtin() -> dict[str, dict[str, Any]]:
    """The built-in lessons by id, in their files' order (read once)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(BUILTIN.glob("*.lesson.json")):
        match = FILE.match(path.name)
        if match:
            found[match.group(1)] = json.loads(path.read_text(encoding="utf-8"))
    return found


def gallery() -> list[dict[str, Any]]:
    return [
        {"id": key, "title": doc["title"], "summary": doc["summary"], "stops": len(doc["stops"])}
        for key, doc in builtin().items()
    ]


def get(db: LessonSource, lesson_id: str) -> dict[str, Any]:
    if lesson_id in builtin():
        return builtin()[lesson_id]
    row = db.lesson(lesson_id) if ID.match(lesson_id) else None
    if row is None:
        raise NoLesson(f"no such lesson: {lesson_id[:64]!r}")
    doc: dict[str, Any] = json.loads(row[0])
    return doc


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(db: LessonSource, doc: dict[str, Any]) -> tuple[str, str]:
    """A new lesson's id and edit token (the token is shown once: the db keeps its hash)."""
    lesson_id, token = secrets.token_urlsafe(12), secrets.token_urlsafe(24)
    db.save_lesson(lesson_id, json.dumps(doc, ensure_ascii=False), _hash(token))
    return lesson_id, token


def _owned(db: LessonSource, lesson_id: str, token: str | None) -> None:
    if lesson_id in builtin():
        raise NotYours("a built-in lesson is not edited here: save a copy of it")
    row = db.lesson(lesson_id) if ID.match(lesson_id) else None
    if row is None:
        raise NoLesson(f"no such lesson: {lesson_id[:64]!r}")
    if token is None or not hmac.compare_digest(_hash(token), row[1]):
        raise NotYours("this lesson's edit token is needed (Authorization: Bearer <edit_token>)")


def update(db: LessonSource, lesson_id: str, token: str | None, doc: dict[str, Any]) -> None:
    _owned(db, lesson_id, token)
    db.update_lesson(lesson_id, json.dumps(doc, ensure_ascii=False))


def delete(db: LessonSource, lesson_id: str, token: str | None) -> None:
    _owned(db, lesson_id, token)
    db.delete_lesson(lesson_id)
