"""A client that holds its answers (issue 38): Python's twin of static/js/changes.js, for the
tests and benchmarks that talk to the server as the page does (``?held=``, ``unchanged``)."""

from __future__ import annotations

from typing import Any


def restore(answer: dict[str, Any], held: dict[str, Any] | None) -> dict[str, Any]:
    """``answer`` made whole from ``held``, the Session it was compared with: the stores named
    in ``unchanged`` and each params entry's left-out fields taken from there."""
    if "unchanged" not in answer:
        return answer
    if held is None:
        raise ValueError("an answer left out stores this client does not hold")
    whole = {k: v for k, v in answer.items() if k != "unchanged"}
    mine, before = answer.get("params"), held["params"]
    if mine is None:
        whole["params"] = before
    else:  # an entry's fields left out are that entry's in held
        whole["params"] = [
            {**(before[i] if i < len(before) else {}), **p} for i, p in enumerate(mine)
        ]
    for store in answer["unchanged"]:
        if store not in ("params", "grad") and store in held:
            whole[store] = held[store]
    return whole


class Holder:
    """One session's answers as a page holds them: ``query()`` says what it holds, ``take``
    makes an answer whole and keeps it."""

    def __init__(self, created: dict[str, Any] | None = None) -> None:
        self.answers: dict[str, dict[str, Any]] = {}
        self.newest = "none"
        if created is not None:
            self.keep("start", created)

    def query(self) -> dict[str, str]:
        return {"held": self.newest}

    def take(self, answer: dict[str, Any], sent: str | None = None) -> dict[str, Any]:
        whole = restore(answer, self.answers.get(sent or self.newest))
        if "version" in whole:
            self.keep(whole["version"], whole)
        return whole

    def keep(self, version: str, session: dict[str, Any]) -> None:
        self.answers[version] = session
        self.newest = version
