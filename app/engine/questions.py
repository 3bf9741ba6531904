"""One question about the line at the cursor, from what the line did on a scratch copy
(``predict.outcome``): its choices, the true ones, what each wrong one believes, and the
explanation shown once the student has answered.

Kinds: ``writes`` (which stores), ``grad`` (one ``.grad`` element after the line), ``loss``
(before a step: the loss on the same batch after it, lower / about the same / higher) and
``raises`` (yes / no). Which kinds fit a line never depends on what the line will do, so being
asked one gives nothing away.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from app.engine.effects import STORES as STORE_TEXT
from app.engine.entries import ENTRIES
from app.engine.predict import GRAD_LINES, Outcome, Value

KINDS = ("writes", "grad", "loss", "raises")
SAME = 1e-6  # "about the same": within this much of the loss, relatively

# the stores a "writes" question offers: the lesson's four, and the rest when the setup has them
# a "writes" question offers every store a line can write (no line writes the batch)
STORES = tuple(s for s in STORE_TEXT if s != "data")
ERROR = "error"


@dataclass
class Choice:
    id: str
    text: str
    misconception: str | None  # None: a true choice
    value: Value | str = None  # grad questions: the number, None, or "error"


class ChoiceView(TypedDict):
    id: str
    text: str
    value: NotRequired[Value | str]  # grad questions: the number, None, or "error"


class ChoiceRevealed(ChoiceView):
    misconception: str | None  # None: a true choice


class QuestionView(TypedDict):
    """The question as asked (the API's QuestionOut)."""

    line: str
    kind: str
    prompt: str
    choices: list[ChoiceView]
    multiple: bool
    param: NotRequired[str]  # grad: the parameter asked about
    index: NotRequired[int | None]  # and the flat index of its element


@dataclass
class Question:
    line: str
    kind: str
    prompt: str
    choices: list[Choice]
    multiple: bool
    answer: list[str]
    explanation: str
    param: str | None = None
    index: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def public(self) -> QuestionView:
        """The question as asked: nothing in it says which choice is true."""
        data: QuestionView = {
            "line": self.line,
            "kind": self.kind,
            "prompt": self.prompt,
            "choices": [self._shown(c) for c in self.choices],
            "multiple": self.multiple,
        }
        if self.param is not None:
            data["param"], data["index"] = self.param, self.index
        return data

    def _shown(self, c: Choice) -> ChoiceView:
        data: ChoiceView = {"id": c.id, "text": c.text}
        if self.kind == "grad":
            data["value"] = c.value
        return data

    def revealed(self) -> list[ChoiceRevealed]:
        return [{**self._shown(c), "misconception": c.misconception} for c in self.choices]


def kinds_for(o: Outcome) -> list[str]:
    """The kinds that make sense for this line, weighted (a kind listed twice comes up twice as
    often). Read from the line and the state before it, never from what the line did."""
    line = ENTRIES[o.entry].method
    kinds = ["writes", "raises"]
    if line in GRAD_LINES:
        kinds += ["grad", "grad"]
    if line == "step" and o.loss_before is not None:
        kinds += ["loss", "loss"]
    return kinds


def ask(o: Outcome, rnd: random.Random, offered_stores: list[str]) -> Question:
    """The question for this line: its kind drawn with ``rnd`` from those that fit."""
    kind = rnd.choice(kinds_for(o))
    if kind == "writes":
        return _writes(o, offered_stores)
    if kind == "grad":
        return _grad(o, rnd)
    if kind == "loss":
        return _loss(o)
    return _raises(o)


def _raised(o: Outcome) -> str:
    return f"`{o.code}` raises: {o.error}"


# -- writes ------------------------------------------------------------------------


def _writes(o: Outcome, offered: list[str]) -> Question:
    truth = o.writes
    ids = [s for s in STORES if s in offered or s in truth]
    choices = []
    for s in ids:
        wrong = None
        if s not in truth:
            if o.error is not None:
                wrong = f"believes `{o.code}` runs and writes {STORE_TEXT[s]}; it raises first"
            elif s in o.reads:
                wrong = f"believes `{o.code}` writes {STORE_TEXT[s]}; it only reads it"
            else:
                wrong = f"believes `{o.code}` writes {STORE_TEXT[s]}; it does not touch it"
        choices.append(Choice(s, STORE_TEXT[s], wrong))
    if o.error is not None:
        explanation = _raised(o) + ": it writes no store (the Session stays as it was)."
    elif truth:
        explanation = f"`{o.code}` writes {', '.join(STORE_TEXT[s] for s in truth)}" + (
            f" and reads {', '.join(STORE_TEXT[s] for s in o.reads)}." if o.reads else "."
        )
    else:
        explanation = f"`{o.code}` writes no store here."
    return Question(
        o.entry,
        "writes",
        f"Which stores will `{o.code}` write? (choose every one; none is possible)",
        choices,
        True,
        [s for s in ids if s in truth],
        explanation,
    )


# -- grad --------------------------------------------------------------------------


def _key(v: Value | str) -> tuple[str, float] | str:
    if v is None or isinstance(v, str):
        return str(v)
    if math.isnan(v):
        return "nan"
    return ("n", v + 0.0)  # -0.0 and 0.0 read the same: one choice


def _texts(values: list[Value | str]) -> list[str]:
    """Numbers with as few digits as keep the different ones apart."""
    numbers = [v for v in values if isinstance(v, float)]
    digits = next(
        (d for d in range(6, 18) if len({f"{v:.{d}g}" for v in numbers}) == len(set(numbers))), 17
    )
    return [
        "None"
        if v is None
        else "an error: the line raises"
        if isinstance(v, str)
        else f"{v:.{digits}g}"
        for v in values
    ]


def _grad(o: Outcome, rnd: random.Random) -> Question:
    line = ENTRIES[o.entry].method
    where = _element(o)
    truth: Value | str = ERROR if o.error is not None else o.after
    runs = f"it raises: {o.error}" if o.error is not None else "it does not"
    # (value, what a student who picks it believes); the truth first, so it wins a tie
    candidates: list[tuple[Value | str, str]] = [(truth, "")]
    if line == "backward" and o.alone is not None:
        candidates.append(
            (
                o.alone,
                "believes backward overwrites .grad with this batch's gradient; it adds "
                "into what .grad holds",
            )
        )
    if line == "backward" and o.summed is not None:
        candidates.append(
            (o.summed, "believes backward runs and adds this batch's gradient; " + runs)
        )
    candidates += [
        (
            None,
            f"believes `{o.code}` leaves .grad None; only zero_grad() (set_to_none=True) or a "
            "fresh model empties it, and only backward fills it",
        ),
        (
            0.0,
            f"believes `{o.code}` leaves zeros in .grad; only zero_grad(set_to_none=False) "
            "writes zeros",
        ),
        (
            o.before,
            f"believes `{o.code}` leaves .grad as it was; "
            + ("it raises" if o.error is not None else "it writes .grad"),
        ),
        (ERROR, f"believes `{o.code}` raises here; it runs"),
    ]
    kept: dict[Any, tuple[Value | str, str]] = {}
    for value, belief in candidates:
        kept.setdefault(_key(value), (value, belief))
    values = list(kept.values())
    rnd.shuffle(values)
    texts = _texts([v for v, _ in values])
    choices = [
        Choice(chr(ord("a") + i), text, None if _key(v) == _key(truth) else belief, v)
        for i, ((v, belief), text) in enumerate(zip(values, texts, strict=True))
    ]
    answer = [c.id for c in choices if c.misconception is None]
    if o.error is not None:
        explanation = _raised(o) + f": {where} stays {_say(o.before)}."
    else:
        explanation = f"After `{o.code}`, {where} holds {_say(o.after)} (before: {_say(o.before)})"
        if line == "backward" and o.alone is not None:
            added = "was None, so it holds" if o.before is None else "adds into it:"
            explanation += f". backward {added} this batch's gradient {_say(o.alone)}"
        explanation += "."
    return Question(
        o.entry,
        "grad",
        f"What will {where} hold after `{o.code}`?",
        choices,
        False,
        answer,
        explanation,
        o.param,
        o.index,
    )


def _element(o: Outcome) -> str:
    """``weight.grad[0, 0]``: the flat index as the tensor's own indices."""
    rest, at = o.index, []
    for size in reversed(o.shape):
        at.append(rest % size)
        rest //= size
    return f"{o.param}.grad[{', '.join(str(i) for i in reversed(at))}]"


def _say(v: Value) -> str:
    return "None" if v is None else f"{v:.6g}"


# -- loss ----------------------------------------------------------------------------


def verdict(before: float, after: float) -> str:
    if after == before or abs(after - before) <= SAME * abs(before):
        return "same"
    return "lower" if after < before else "higher"


def _loss(o: Outcome) -> Question:
    assert o.loss_before is not None and o.loss_after is not None
    truth = verdict(o.loss_before, o.loss_after)
    beliefs = {
        "lower": "believes every step lowers the loss on its batch; this one does not (a step "
        "that skips, or one too long or along a stale gradient, does not)",
        "same": "believes this step leaves the loss where it was; it moves the parameters",
        "higher": "believes this step overshoots; a short enough step along this batch's "
        "negative gradient lowers its loss, and this one does",
    }
    texts = {
        "lower": "lower",
        "same": f"about the same (within {SAME:g} relative)",
        "higher": "higher",
    }
    choices = [Choice(k, texts[k], None if k == truth else beliefs[k]) for k in texts]
    explanation = (
        f"On the same batch the loss goes from {o.loss_before:.6g} to {o.loss_after:.6g} after "
        f"`{o.code}`: {texts[truth]}."
    )
    if o.error is not None:
        explanation = _raised(o) + ", so nothing moved: " + explanation
    return Question(
        o.entry,
        "loss",
        f"After `{o.code}`, computed again on the same batch, will the loss be lower, about the "
        f"same or higher than the loss just computed ({o.loss_before:.6g})?",
        choices,
        False,
        [truth],
        explanation,
    )


# -- raises --------------------------------------------------------------------------


def _raises(o: Outcome) -> Question:
    truth = "no" if o.error is None else "yes"
    choices = [
        Choice(
            "yes",
            "yes, it raises an error",
            None if truth == "yes" else f"believes `{o.code}` cannot run now; it can",
        ),
        Choice(
            "no",
            "no, it runs",
            None if truth == "no" else f"believes `{o.code}` can run now; {o.error}",
        ),
    ]
    explanation = (
        _raised(o)
        if o.error is not None
        else f"`{o.code}` runs"
        + (f" and writes {', '.join(STORE_TEXT[s] for s in o.writes)}." if o.writes else ".")
    )
    return Question(
        o.entry, "raises", f"Will `{o.code}` raise an error?", choices, False, [truth], explanation
    )
