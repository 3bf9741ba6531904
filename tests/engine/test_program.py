from __future__ import annotations

from app.engine.program import Toggles, carry_cursor, program_for


def test_toggles_make_the_classic_bugs() -> None:
    assert program_for(Toggles()) == ["forward", "loss", "zero_grad", "backward", "step"]
    assert program_for(Toggles(skip_zero_grad=True)) == ["forward", "loss", "backward", "step"]
    assert program_for(Toggles(step_first=True)) == [
        "forward", "loss", "zero_grad", "step", "backward"
    ]  # fmt: skip
    assert program_for(Toggles(True, True)) == ["forward", "loss", "step", "backward"]


def test_cursor_moves_past_the_lines_already_run() -> None:
    correct, skip = program_for(Toggles()), program_for(Toggles(skip_zero_grad=True))
    first = program_for(Toggles(step_first=True))
    assert carry_cursor(correct, 0, skip) == 0
    assert carry_cursor(correct, 2, skip) == 2  # forward, loss run: backward next
    assert carry_cursor(correct, 3, skip) == 2  # zero_grad ran too: still backward next
    assert carry_cursor(skip, 2, correct) == 2  # zero_grad next
    assert carry_cursor(correct, 4, first) == 3  # backward ran: step next
    assert carry_cursor(first, 4, skip) == 2  # step ran early, backward did not: backward next
    assert carry_cursor(correct, 4, skip) == 3
    assert carry_cursor(["forward", "loss"], 1, ["forward"]) == 0  # all ran: wrapped
