"""``loop-stepper doctor`` as a user runs it, in a subprocess of the installed command: its
report like a linter's (``file:line: id message``), ``--json``, the script's own arguments, and
exit codes that mean something (0 nothing found, 1 diagnoses, 2 the script failed or bad
usage)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

COMMAND = Path(sys.executable).parent / "loop-stepper"

LOOP = """\
import sys
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
X, y = torch.randn(32, 4), torch.randn(32, 1)
print("args", sys.argv[1:])
for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    {zero}
    loss = nn.functional.mse_loss(model(X), y)
    loss.backward()
    optimizer.step()
print("trained", float(loss))
"""
CORRECT = LOOP.format(zero="optimizer.zero_grad()")
BUGGY = LOOP.format(zero="pass")
BACKWARD_LINE = 13


def doctor(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(source)
    return subprocess.run(
        [str(COMMAND), "doctor", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_correct_loop_exits_0_and_says_so(tmp_path: Path) -> None:
    done = doctor(tmp_path, CORRECT, "train.py")
    assert done.returncode == 0, done.stderr
    assert "args []" in done.stdout and "trained" in done.stdout  # the script ran, to its end
    assert done.stdout.strip().endswith("Found no silent bug in 5 optimizer steps.")


def test_a_bug_exits_1_at_its_line_like_a_linter(tmp_path: Path) -> None:
    done = doctor(tmp_path, BUGGY, "train.py")
    assert done.returncode == 1, done.stderr
    first = next(line for line in done.stdout.splitlines() if "skip_zero_grad" in line)
    assert first.startswith(f"train.py:{BACKWARD_LINE}: skip_zero_grad ")
    assert "iteration 2" in done.stdout
    assert "Found 1 silent bug in 5 optimizer steps." in done.stdout


def test_json_to_a_file_has_the_issues_keys(tmp_path: Path) -> None:
    done = doctor(tmp_path, BUGGY, "train.py", "--json", "report.json")
    assert done.returncode == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report) == {"script", "iterations", "diagnoses"}
    assert report["script"] == "train.py" and report["iterations"] == 5
    (found,) = report["diagnoses"]
    assert set(found) == {"bug", "file", "line", "iteration", "message", "evidence"}
    assert found["bug"] == "skip_zero_grad"
    assert found["line"] == BACKWARD_LINE and found["iteration"] == 2
    assert found["file"] == "train.py"  # the script as it was named
    assert found["evidence"]["param"] == "model.weight"


def test_json_to_standard_output_sends_the_scripts_output_to_standard_error(
    tmp_path: Path,
) -> None:
    done = doctor(tmp_path, BUGGY, "train.py", "--json", "-")
    assert done.returncode == 1
    report = json.loads(done.stdout)  # nothing but the JSON
    assert [d["bug"] for d in report["diagnoses"]] == ["skip_zero_grad"]
    assert "args []" in done.stderr and "trained" in done.stderr


def test_the_scripts_arguments_and_the_iterations(tmp_path: Path) -> None:
    done = doctor(tmp_path, BUGGY, "train.py", "--iterations", "3", "--json", "-", "--", "20")
    assert done.returncode == 1
    assert "args ['20']" in done.stderr
    assert "trained" not in done.stderr  # stopped after 3 of its 20 steps
    assert json.loads(done.stdout)["iterations"] == 3


def test_a_failing_script_exits_2_with_its_traceback_in_pytorchs_words(tmp_path: Path) -> None:
    source = CORRECT.replace("model(X)", "model(X.T)")
    done = doctor(tmp_path, source, "train.py")
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert 'train.py", line 12' in done.stderr
    assert "mat1 and mat2 shapes cannot be multiplied (4x32 and 4x1)" in done.stderr


def test_a_failure_the_doctor_names_exits_1(tmp_path: Path) -> None:
    source = CORRECT.replace("    loss.backward()\n", "    loss.backward()\n    loss.backward()\n")
    done = doctor(tmp_path, source, "train.py", "--json", "-")
    assert done.returncode == 1
    (found,) = json.loads(done.stdout)["diagnoses"]
    assert found["bug"] == "backward_twice" and found["line"] == BACKWARD_LINE + 1
    assert "Trying to backward through the graph a second time" in found["message"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["missing.py"], "no such script: missing.py"),
        (["train.py", "--iterations", "0"], "--iterations must be at least 1"),
        (["train.py", "--iterations", "many"], "invalid int value: 'many'"),
        ([], "the following arguments are required: script"),
    ],
)
def test_bad_usage_exits_2_and_says_why(tmp_path: Path, args: list[str], said: str) -> None:
    done = doctor(tmp_path, CORRECT, *args)
    assert done.returncode == 2
    assert said in done.stderr
    assert "args" not in done.stdout  # the script did not run


PACKAGE_TRAIN = """\
import sys
import torch
from torch import nn
from .data import batch

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
print("args", sys.argv[1:], __name__, __package__)
for epoch in range(5):
    loss = nn.functional.mse_loss(model(batch()[0]), batch()[1])
    loss.backward(){comment}
    optimizer.step()
"""


def package(tmp_path: Path, comment: str = "") -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "data.py").write_text(
        "import torch\n\ndef batch():\n    torch.manual_seed(1)\n"
        "    return torch.randn(32, 4), torch.randn(32, 1)\n"
    )
    (tmp_path / "pkg" / "train.py").write_text(PACKAGE_TRAIN.format(comment=comment))


def test_a_module_runs_as_python_m_runs_it(tmp_path: Path) -> None:
    package(tmp_path)
    done = doctor(tmp_path, CORRECT, "-m", "pkg.train", "--lr", "0.1")
    assert done.returncode == 1, done.stderr
    assert "args ['--lr', '0.1'] __main__ pkg" in done.stdout  # python -m's argv and package
    first = done.stdout.splitlines()[1]
    assert first.startswith("pkg/train.py:12: skip_zero_grad ")
    assert doctor(tmp_path, CORRECT, "-m", "nowhere.train").returncode == 2


def test_a_line_comment_silences_its_kind_and_json_says_so(tmp_path: Path) -> None:
    package(tmp_path, "  # doctor: ignore[skip_zero_grad]")
    done = doctor(tmp_path, CORRECT, "--json", "report.json", "-m", "pkg.train")
    assert done.returncode == 0, done.stdout
    assert "Found no silent bug in 5 optimizer steps; 1 silenced by # doctor: ignore." in (
        done.stdout
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["diagnoses"] == []
    (quiet,) = report["silenced"]
    assert quiet["bug"] == "skip_zero_grad" and quiet["line"] == 12


def test_select_and_ignore_choose_the_kinds(tmp_path: Path) -> None:
    assert doctor(tmp_path, BUGGY, "--ignore", "skip_zero_grad", "train.py").returncode == 0
    assert doctor(tmp_path, BUGGY, "--select", "zeros,log_tensor", "train.py").returncode == 0
    chosen = doctor(tmp_path, BUGGY, "--select", "skip_zero_grad", "train.py")
    assert chosen.returncode == 1 and "skip_zero_grad" in chosen.stdout
    wrong = doctor(tmp_path, BUGGY, "--ignore", "skip_zero_grads", "train.py")
    assert wrong.returncode == 2 and "no such kind: skip_zero_grads" in wrong.stderr


def test_explain_prints_a_kind_with_its_example_and_fix(tmp_path: Path) -> None:
    done = doctor(tmp_path, CORRECT, "--explain", "zeros")
    assert done.returncode == 0
    assert done.stdout.startswith("zeros (order)\n")
    assert "optimizer.zero_grad(set_to_none=False)" in done.stdout
    assert "Fix: call optimizer.zero_grad() before backward()" in done.stdout
    unknown = doctor(tmp_path, CORRECT, "--explain", "nope")
    assert unknown.returncode == 2 and "no such kind: nope" in unknown.stderr


def test_steps_of_an_optimizer_made_again_at_its_line_are_counted(tmp_path: Path) -> None:
    remade = CORRECT.replace(
        "    optimizer.zero_grad()",
        "    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)\n    optimizer.zero_grad()",
    )
    done = doctor(tmp_path, remade, "train.py", "60", "--iterations", "100")
    assert done.returncode == 1, done.stderr
    assert "train.py:11: optimizer_recreated a new Adam" in done.stdout
    assert done.stdout.strip().endswith("Found 1 silent bug in 60 optimizer steps.")


FROZEN = """\
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(84)
backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
head = nn.Linear(32, 3)
model = nn.Sequential(backbone, head)
for p in backbone.parameters():
    p.requires_grad = False  # frozen on purpose: the optimizer skips what gets no gradient
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

X, y = torch.randn(96, 16), torch.randint(0, 3, (96,))
for epoch in range(3):
    for i in range(0, 96, 32):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
"""


def test_a_frozen_backbone_the_optimizer_holds_is_named_nothing(tmp_path: Path) -> None:
    """The decision of issue 50: a fine-tune that freezes its backbone and gives the optimizer
    every parameter anyway (it skips what gets no gradient) is not a bug."""
    done = doctor(tmp_path, FROZEN, "train.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("Found no silent bug in 9 optimizer steps.")
