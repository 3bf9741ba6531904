"""The catalogue: every kind defined once, with an example and a fix, and the doctor's table in
docs/doctor.md made from them, exactly."""

from __future__ import annotations

from pathlib import Path

from loop_stepper.doctor.bugs import BUGS, KINDS, message, table
from loop_stepper.doctor.kinds import FAMILIES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"


def test_every_kind_is_defined_once_with_its_numbers_example_and_fix() -> None:
    assert list(BUGS) == list(KINDS) and len(set(BUGS)) == len(BUGS)
    families = {f.FAMILY for f in FAMILIES}
    for kind in KINDS.values():
        assert kind.family in families, kind.id
        assert kind.shows and kind.fix and kind.said, kind.id
        assert kind.example.strip() and compile(_dedented(kind.example), kind.id, "exec")
        assert not kind.fix.endswith("."), kind.id  # one sentence, joined after what happened


def test_a_message_is_what_happened_then_the_fix_with_the_evidence_numbers() -> None:
    said = message("scheduler_before_step", {"optimizer": "SGD", "lr": 0.1})
    assert "before any optimizer.step() of SGD" in said and "(lr 0.1) was never used" in said
    assert said.endswith("; call scheduler.step() after optimizer.step()")


def test_the_docs_table_is_the_catalogues() -> None:
    text = DOCS.read_text()
    start = text.index("<!-- kinds: made by python -m loop_stepper.doctor.bugs -->\n")
    end = text.index("\n<!-- /kinds -->")
    assert text[text.index("\n", start) + 1 : end] == table()
    assert all(f"| `{bug}` |" in table() for bug in BUGS)


def _dedented(code: str) -> str:
    import textwrap

    return textwrap.dedent(code).replace("...", "pass")
