"""``# doctor: ignore[ID]`` on the line a diagnosis names silences that kind there (one kind,
several, or every kind), and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from loop_stepper.doctor.silence import silenced


@pytest.mark.parametrize(
    ("comment", "bug", "quiet"),
    [
        ("# doctor: ignore[zeros]", "zeros", True),
        ("# doctor: ignore[zeros]", "skip_zero_grad", False),
        ("#doctor:ignore[zeros, skip_zero_grad]", "skip_zero_grad", True),
        ("# doctor: ignore", "log_tensor", True),
        ("# noqa", "zeros", False),
        ("# doctor: ignored", "zeros", False),
    ],
)
def test_a_line_comment_silences_what_it_names(
    tmp_path: Path, comment: str, bug: str, quiet: bool
) -> None:
    script = tmp_path / "train.py"
    script.write_text(f"x = 1\nloss.backward()  {comment}\n")
    assert silenced(bug, str(script), 2) is quiet
    assert not silenced(bug, str(script), 1)  # only on its own line
    assert not silenced(bug, None, None)
