"""One question about the line at the cursor, from what the line did on a scratch copy
(``predict.outcome``): its choices, the true ones, why each wrong one is wrong, and the
explanation shown once the student has answered.

Both are said as a teacher would say them to the student who picked the choice: the page
shows ``You chose “<text>”: <misconception>.``, so a misconception is one clause, and an
explanation whole sentences, with the error's own words last when the line raises.

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
    misconception: str | None  # None: a true choice; else why it is wrong, one clause
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


def _raised(o: Outcome, so: str) -> str:
    """The line raised: what follows from it (``so``), then the error's own words (PyTorch's,
    or the Lab's for a line that cannot run yet)."""
    return f"`{o.code}` raises an error, so {so}. The error says: {_sentence(o.error or '')}"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# -- writes ------------------------------------------------------------------------


def _writes(o: Outcome, offered: list[str]) -> Question:
    truth = o.writes
    ids = [s for s in STORES if s in offered or s in truth]
    choices = []
    for s in ids:
        wrong = None
        if s not in truth:
            if o.error is not None:
                wrong = f"`{o.code}` raises an error before it can write {STORE_TEXT[s]}"
            elif s in o.reads:
                wrong = f"`{o.code}` only reads {STORE_TEXT[s]}; it does not write that store"
            else:
                wrong = f"`{o.code}` neither reads nor writes {STORE_TEXT[s]}"
        choices.append(Choice(s, STORE_TEXT[s], wrong))
    writes = _listed([STORE_TEXT[s] for s in truth]) if truth else ""
    if o.error is not None:
        explanation = _raised(o, "it writes no store and the session stays as it was")
    elif truth and o.reads:
        reads = _listed([STORE_TEXT[s] for s in o.reads])
        explanation = f"`{o.code}` reads {reads}, and writes {writes}."
    elif truth:
        explanation = f"`{o.code}` writes {writes}."
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
        "None" if v is None else "it raises an error" if isinstance(v, str) else f"{v:.{digits}g}"
        for v in values
    ]


def _grad(o: Outcome, rnd: random.Random) -> Question:
    line = ENTRIES[o.entry].method
    where = _element(o)
    truth: Value | str = ERROR if o.error is not None else o.after
    # (value, why a student who picks it is wrong); the truth first, so it wins a tie
    candidates: list[tuple[Value | str, str]] = [(truth, "")]
    if o.error is not None:
        unchanged = f".grad does keep that value, but only because `{o.code}` raises an error first"
        # whatever it would hold, the line never gets there
        raises = f", but `{o.code}` raises an error here and .grad keeps what it held"
        if line == "backward" and o.alone is not None:
            candidates.append((o.alone, "that is this batch's gradient alone" + raises))
        if line == "backward" and o.summed is not None:
            candidates.append(
                (o.summed, "that is what .grad held plus this batch's gradient" + raises)
            )
        candidates += [
            (None, "that would mean .grad is None afterwards" + raises),
            (0.0, "that would mean .grad holds zeros afterwards" + raises),
            (o.before, unchanged),
        ]
    else:
        unchanged = f"that is what .grad held before, and `{o.code}` changes it"
        if line == "backward" and o.alone is not None:
            candidates.append(
                (
                    o.alone,
                    "that is this batch's gradient alone, but backward does not replace .grad: "
                    "it adds the gradient to what .grad already holds",
                )
            )
        if line == "backward" and o.summed is not None:
            candidates.append(
                (
                    o.summed,
                    "that is what .grad held plus this batch's gradient, but after "
                    f"`{o.code}` it holds {_say(o.after)}",
                )
            )
        candidates += [
            (
                None,
                f"that would mean `{o.code}` leaves .grad None, but only zero_grad() "
                "(set_to_none=True) or a fresh model empties .grad, and only backward fills it",
            ),
            (
                0.0,
                f"that would mean `{o.code}` writes zeros into .grad, but only "
                "zero_grad(set_to_none=False) does that",
            ),
            (o.before, unchanged),
            (ERROR, f"that would mean `{o.code}` cannot run here, but it runs"),
        ]
    # a value equal to what .grad held is wrong for that reason, whichever candidate it came as
    kept: dict[Any, tuple[Value | str, str]] = {_key(truth): (truth, "")}
    for value, belief in candidates:
        same = _key(value) == _key(o.before)
        kept.setdefault(_key(value), (value, unchanged if same else belief))
    values = list(kept.values())
    rnd.shuffle(values)
    texts = _texts([v for v, _ in values])
    choices = [
        Choice(chr(ord("a") + i), text, None if _key(v) == _key(truth) else belief, v)
        for i, ((v, belief), text) in enumerate(zip(values, texts, strict=True))
    ]
    answer = [c.id for c in choices if c.misconception is None]
    if o.error is not None:
        explanation = _raised(o, f"{where} stays {_say(o.before)}")
    else:
        explanation = f"After `{o.code}`, {where} holds {_say(o.after)}"
        if line == "backward" and o.alone is not None and o.before is None:
            explanation += (
                f": .grad was None, so backward put this batch's gradient, {_say(o.alone)}, there."
            )
        elif line == "backward" and o.alone is not None:
            explanation += (
                f": backward added this batch's gradient, {_say(o.alone)}, to the "
                f"{_say(o.before)} .grad held."
            )
        elif _key(o.after) == _key(o.before):
            explanation += ", as before: this line leaves .grad alone."
        else:
            explanation += f"; it held {_say(o.before)} before."
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
    if truth == "same":
        why = (
            f"`{o.code}` raises an error, so the parameters do not move"
            if o.error is not None
            else "this step leaves it about where it was"
        )
        wrong = {"lower": f"not every step lowers the loss on its batch; {why}", "higher": why}
    else:
        way = "down" if truth == "lower" else "up"
        wrong = {"same": f"the step moves the parameters, and the loss on this batch goes {way}"}
        if truth == "lower":
            wrong["higher"] = (
                "a short enough step along this batch's negative gradient lowers its loss, and "
                "this one does"
            )
        else:
            wrong["lower"] = (
                "not every step lowers the loss on its batch: one too long, or along a stale "
                "gradient, raises it, and this one does"
            )
    texts = {
        "lower": "lower",
        "same": f"about the same (within {SAME:g} relative)",
        "higher": "higher",
    }
    choices = [Choice(k, texts[k], wrong.get(k)) for k in texts]
    moved = (
        f"the loss on the same batch goes from {o.loss_before:.6g} to {o.loss_after:.6g}, "
        f"so it is {texts[truth]}"
    )
    if o.error is not None:
        explanation = _raised(o, f"nothing moves: {moved}")
    else:
        explanation = f"After `{o.code}`, {moved}."
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
            None if truth == "yes" else f"`{o.code}` can run here, and it does",
        ),
        Choice(
            "no",
            "no, it runs",
            None if truth == "no" else f"`{o.code}` cannot run here: it raises the error above",
        ),
    ]
    if o.error is not None:
        explanation = f"`{o.code}` cannot run here. The error says: {_sentence(o.error)}"
    elif o.writes:
        explanation = f"`{o.code}` runs and writes {_listed([STORE_TEXT[s] for s in o.writes])}."
    else:
        explanation = f"`{o.code}` runs."
    return Question(
        o.entry, "raises", f"Will `{o.code}` raise an error?", choices, False, [truth], explanation
    )
