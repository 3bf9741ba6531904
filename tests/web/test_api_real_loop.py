"""The rest of the real loop over HTTP: the new setup, its 422s, the new stores in answers,
warnings, a resume with no checkpoint (409) and the export's refusal (409)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from app.web.answers import SessionOut
from support.oracle import Plain
from tests.web.test_api import line, new
from tests.web.test_api_script import numbers, run_python

STEP_LR = {"kind": "step", "step_size": 1, "gamma": 0.5}


def program(client: httpx.Client, sid: str, entries: list[str]) -> dict[str, Any]:
    r = client.patch(f"/api/sessions/{sid}", json={"program": entries})
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.mark.parametrize(
    "body",
    [
        {"scenario": "moons", "dropout": 1.0},
        {"scenario": "moons", "dropout": -0.1},
        {"max_norm": 0},
        {"max_norm": -1.0},
        {"scheduler": {"kind": "exponential", "gamma": 0.9}},
        {"scheduler": {"kind": "step", "step_size": 0, "gamma": 0.5}},
        {"scenario": "neuron", "dropout": 0.5},
        {"scenario": "parabola", "batchnorm": True},
        {"scenario": "neuron", "softmax_before_loss": True},
        {"scenario": "moons", "dtype": "float16"},
    ],
)
def test_bad_setup_is_422(client: httpx.Client, body: dict[str, Any]) -> None:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 422 and r.json()["detail"], r.text


def test_the_new_stores_in_an_answer(client: httpx.Client) -> None:
    s = new(
        client,
        scenario="moons",
        dropout=0.5,
        batchnorm=True,
        dtype="float32",
        scheduler=STEP_LR,
        max_norm=0.25,
    )
    assert s["mode"] == "train" and s["lr"] == 0.3 and s["ckpt"] is None
    assert s["scheduler"] == {**STEP_LR, "T_max": None} and s["max_norm"] == 0.25
    assert s["model_options"] == {
        "dropout": 0.5,
        "batchnorm": True,
        "softmax_before_loss": False,
        "dtype": "float32",
    }
    assert [b["name"] for b in s["buffers"]][:3] == [
        "1.running_mean",
        "1.running_var",
        "1.num_batches_tracked",
    ]
    assert s["running_loss"]["value"] == 0.0 and not s["running_loss"]["tensor"]
    sid = s["id"]
    s = program(
        client,
        sid,
        ["forward", "loss", "zero_grad", "backward", "clip_grad_norm", "step", "scheduler_step"],
    )
    assert s["code"][4] == "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.25)"
    s = line(client, sid, "run", {"iterations": 2})
    assert s["lr"] == 0.075 and s["last"]["reads"] == ["lr"] and s["last"]["writes"] == ["lr"]
    assert s["buffers"][2]["value"] == 2  # num_batches_tracked: two train-mode forwards
    plain = Plain(
        "moons", 0.3, 0, dropout=0.5, batchnorm=True, dtype=torch.float32, scheduler=STEP_LR
    )
    plain.max_norm = 0.25
    for entry in s["program"] * 2:
        plain.line(entry)
    assert [p["value"] for p in s["params"]] == [
        p.detach().tolist() for p in plain.model.parameters()
    ]
    SessionOut.model_validate(s)


def test_clip_result_and_the_schedulers_warning(client: httpx.Client) -> None:
    sid = new(client, scheduler=STEP_LR)["id"]
    program(client, sid, ["forward", "loss", "backward", "clip_grad_norm", "scheduler_step"])
    for _ in range(3):
        s = line(client, sid, "next")
    s = line(client, sid, "next")
    assert s["last"]["result"] == pytest.approx((23.5**2 + 8**2) ** 0.5)
    assert s["last"]["scaled"] is True and s["last"]["warnings"] == []
    s = line(client, sid, "next")
    assert len(s["last"]["warnings"]) == 1
    assert s["last"]["warnings"][0].startswith(
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`."
    )
    assert s["lr"] == 0.025


def test_resume_without_a_checkpoint_is_409(client: httpx.Client) -> None:
    sid = new(client, optimizer={"kind": "adam"})["id"]
    program(client, sid, ["resume", "forward"])
    r = client.post(f"/api/sessions/{sid}/next")
    assert r.status_code == 409
    assert r.json() == {
        "detail": "resume needs a checkpoint: run checkpoint first",
        "line": "resume",
    }
    program(client, sid, ["forward", "loss", "backward", "step", "checkpoint", "resume"])
    s = line(client, sid, "run", {"iterations": 1})
    assert s["ckpt"] == {"keys": ["model", "optimizer"], "iteration": 1, "steps": 1}
    assert s["optimizer_state"][0]["state"]["step"] == 1.0


def test_the_export_refuses_a_backward_through_a_graph_from_before_resume(
    client: httpx.Client,
) -> None:
    """What it cannot write yet (tests/export/test_real_loop.py says why): a 409 in its own
    words, in either format, never a wrong script."""
    sid = new(client, scenario="moons")["id"]
    program(client, sid, ["forward", "loss", "checkpoint", "resume", "backward"])
    line(client, sid, "run", {"iterations": 1})
    for fmt in ("py", "ipynb"):
        r = client.get(f"/api/sessions/{sid}/script", params={"format": fmt})
        assert r.status_code == 409, r.text
        assert r.json()["detail"] == (
            "the export cannot write a backward through a graph built before resume yet: "
            "this session's log holds one"
        )


def test_the_export_writes_checkpoints_dropout_and_clipping(client: httpx.Client) -> None:
    sid = new(client)["id"]  # (tests/export/test_export.py runs the scripts)
    program(client, sid, ["forward", "loss", "backward", "checkpoint", "step", "resume"])
    line(client, sid, "run", {"iterations": 1})
    for fmt in ("py", "ipynb"):
        r = client.get(f"/api/sessions/{sid}/script", params={"format": fmt})
        assert r.status_code == 200
        assert 'model.load_state_dict(ckpt[\\"model\\"])' in r.text or (
            'model.load_state_dict(ckpt["model"])' in r.text
        )
    sid = new(client, scenario="moons", dropout=0.5)["id"]  # (dropout exports: test_export)
    r = client.get(f"/api/sessions/{sid}/script")
    assert r.status_code == 200 and "nn.Dropout(0.5)" in r.text
    sid = new(client, max_norm=0.5)["id"]  # the entries it can write still export
    program(client, sid, ["forward", "loss", "backward", "clip_grad_norm", "step", "log_item"])
    line(client, sid, "run", {"iterations": 1})
    r = client.get(f"/api/sessions/{sid}/script")
    assert r.status_code == 200
    assert "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)" in r.text


def test_presets_name_their_setup(client: httpx.Client) -> None:
    presets = {p["name"]: p for p in client.get("/api/presets").json()}
    assert presets["resume_without_optimizer"]["setup"] == {"optimizer": {"kind": "adam"}}
    assert presets["softmax_before_loss"]["setup"] == {
        "scenario": "moons",
        "softmax_before_loss": True,
    }
    assert presets["correct"]["setup"] == {}
    for name in (
        "clip_before_backward",
        "scheduler_before_step",
        "eval_while_training",
        "log_tensor",
    ):
        assert presets[name]["program"] and presets[name]["explanation"]
    s = new(client, scenario="moons", softmax_before_loss=True)
    assert s["preset"] == "softmax_before_loss"
    assert s["code"][1] == "loss = loss_fn(out.softmax(dim=1), y)"


def test_patch_max_norm_midway_matches_plain_pytorch(client: httpx.Client, tmp_path: Path) -> None:
    """max_norm is a setting of a line, like lr: a PATCH changes the clipping line from the
    next iteration on, a rewind brings back the one in force then, and the script follows."""
    loop = ["forward", "loss", "zero_grad", "backward", "clip_grad_norm", "step"]
    sid = new(client, scenario="moons", lr=0.5)["id"]
    program(client, sid, loop)
    plain = Plain("moons", 0.5)
    answers = []
    for max_norm in (2.0, 0.05, 0.3):
        r = client.patch(f"/api/sessions/{sid}", json={"max_norm": max_norm})
        assert r.status_code == 200, r.text
        s = r.json()
        assert s["max_norm"] == max_norm
        assert (
            s["code"][4]
            == f"torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm={max_norm})"
        )
        plain.max_norm = max_norm
        for entry in loop:
            plain.line(entry)
            s = line(client, sid, "next")
            if entry == "clip_grad_norm":
                assert s["last"]["result"] == float(plain.norm)  # type: ignore[arg-type]
                assert s["last"]["scaled"] is (float(plain.norm) > max_norm)  # type: ignore[arg-type]
        answers.append(s)
        for p, (name, q) in zip(s["params"], plain.model.named_parameters(), strict=True):
            assert p["name"] == name
            assert torch.tensor(p["value"], dtype=q.dtype).equal(q.detach()), name
    # the moment after the first iteration: max_norm 2.0 again, and the same answer
    s = line(client, sid, "rewind", {"to": 6})
    assert s["max_norm"] == 2.0 and s["code"][4].endswith("max_norm=2.0)")
    assert s["params"] == answers[0]["params"]
    r = client.patch(f"/api/sessions/{sid}", json={"max_norm": 0})
    assert r.status_code == 422 and client.get(f"/api/sessions/{sid}").json()["max_norm"] == 2.0
    # the script holds each change and runs to the session's numbers
    line(client, sid, "rewind", {"to": 18})
    script = client.get(f"/api/sessions/{sid}/script").text
    assert "# clip_grad_norm_'s max_norm is now 0.05" in script
    printed = run_python(script, tmp_path)
    assert printed == numbers(answers[-1])
