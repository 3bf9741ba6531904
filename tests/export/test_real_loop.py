"""The export of the rest of the real loop: mixed precision (autocast, a GradScaler and its
refusals), schedulers, float32 moons, checkpoints and resume; each script runs to the Lab's
numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import export
from tests.export.test_export import PRESET, Recorder, check_all, make_setup

SCALED = [*PRESET["correct"], "scaler_update"]
STEP_LR = {"kind": "step", "step_size": 2, "gamma": 0.5}


def test_amp_and_schedulers_run_to_the_same_numbers(tmp_path: Path) -> None:
    """Autocast (bfloat16, float16 with and without a GradScaler, with its refusals in
    PyTorch's words), float32 moons, and scheduler.step() in and out of its slot."""
    fp16 = Recorder(make_setup("neuron", program=SCALED) | {"amp": {"dtype": "float16"}})
    fp16.run(7)
    fp16.lines(["forward", "loss", "backward", "step", "step", "scaler_update"])
    fp16.lines(["scaler_update", "clip_grad_norm", "clip_grad_norm"])
    fp16.run(2)
    # a second step before update, update twice, unscale_ twice: PyTorch refuses each
    oks = [e["ok"] for e in fp16.events[-21:-12]]
    assert oks == [True, True, True, True, False, True, False, True, False]
    assert fp16.lab.amp.skipped >= 5  # the first 5 while the scale came down
    unscaled = Recorder(
        make_setup("neuron") | {"amp": {"dtype": "float16", "scaler": False}, "max_norm": 2.0}
    )
    unscaled.program([*PRESET["correct"][:4], "clip_grad_norm", "step", "scaler_update"])
    unscaled.run(3)
    bf16 = Recorder(
        make_setup("moons", accumulate=2) | {"dtype": "float32", "amp": {"dtype": "bfloat16"}}
    )
    bf16.run(3)
    step_lr = Recorder(make_setup("neuron") | {"scheduler": STEP_LR})
    step_lr.program(list(PRESET["scheduler_before_step"]))
    step_lr.run(3)
    step_lr.program([*PRESET["correct"], "scheduler_step"])
    step_lr.run(3)
    cosine = Recorder(make_setup("moons") | {"scheduler": {"kind": "cosine", "T_max": 4}})
    cosine.program([*PRESET["correct"], "scheduler_step"])
    cosine.run(5)
    no_scheduler = Recorder(make_setup("neuron"))
    no_scheduler.lines(["scheduler_step", "forward"])
    recs = [fp16, unscaled, bf16, step_lr, cosine, no_scheduler]
    outputs = check_all(recs, tmp_path)
    source = export.script(fp16.setup, fp16.events)
    assert 'scaler = torch.amp.GradScaler("cpu")' in source
    assert 'with torch.autocast("cpu", dtype=torch.float16): out = model(X)' in source
    assert "scaler.scale(loss).backward()" in source and "scaler.update()" in source
    assert "step() has already been called since the last update()." in outputs[0]
    assert "No inf checks were recorded prior to update." in outputs[0]
    assert "# Mixed precision: autocast float16, with a GradScaler" in source
    assert "scaler.update()" in export.script(unscaled.setup, unscaled.events)
    assert "refused: scaler.update() needs a GradScaler" in outputs[1]
    assert "X_train = X_train.float()" in export.script(bf16.setup, bf16.events)
    lr_source = export.script(step_lr.setup, step_lr.events)
    assert "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)" in (
        lr_source
    )
    assert "scheduler.step()" in lr_source
    assert "refused: scheduler.step() needs a scheduler" in outputs[5]


def test_checkpoints_and_resume_run_to_the_same_numbers(tmp_path: Path) -> None:
    """Adam resumed with and without its state (the loss jumps without), a GradScaler's state
    in the checkpoint, and resume before any checkpoint (the Lab's refusal)."""
    adam = {"kind": "adam", "betas": [0.9, 0.999], "weight_decay": 0.0}
    recs = []
    for program in (
        PRESET["resume_without_optimizer"],
        [*PRESET["correct"], "checkpoint", "resume"],
    ):
        rec = Recorder(make_setup("moons", optimizer=adam))
        rec.line("resume")  # no checkpoint yet: refused
        rec.program(list(program))
        rec.run(4)
        recs.append(rec)
    scaled = Recorder(make_setup("neuron", program=SCALED) | {"amp": {"dtype": "float16"}})
    scaled.run(6)
    scaled.lines(["checkpoint", "resume", "checkpoint(model_only=True)", "resume"])
    scaled.run(2)
    recs.append(scaled)
    outputs = check_all(recs, tmp_path)
    assert outputs[0].startswith("refused: resume needs a checkpoint: run checkpoint first")
    source = export.script(scaled.setup, scaled.events)
    assert "import copy" in source and 'scaler.load_state_dict(ckpt["scaler"])' in source
    assert '"scaler": scaler.state_dict()' in source
    assert "optimizer.load_state_dict(torch.optim.Adam(" in export.script(
        recs[0].setup, recs[0].events
    )


def test_a_backward_through_a_graph_from_before_resume_is_refused(tmp_path: Path) -> None:
    """The Lab's resume gives new parameter tensors (a new model's): the old graph's backward
    reaches the old ones. The script's in-place load_state_dict cannot say that, so such a log
    is refused (never a wrong script); a backward after a new forward exports as usual."""
    refused = Recorder(make_setup("moons"))
    refused.lines(["forward", "loss", "checkpoint", "resume", "backward"])
    with pytest.raises(export.Unsupported, match="a graph built before resume"):
        export.script(refused.setup, refused.events)
    fine = Recorder(make_setup("moons"))
    fine.lines(["forward", "loss", "checkpoint", "resume", "forward", "loss", "backward", "step"])
    check_all([fine], tmp_path)
