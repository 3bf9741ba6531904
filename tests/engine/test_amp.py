"""Mixed precision against plain PyTorch, bit for bit: bfloat16 autocast, float16 with a
GradScaler (its scale sequence and skipped steps), float16 without one."""

from __future__ import annotations

import pytest
import torch

from app.engine import Lab, LineError
from app.engine.amp import AmpSpec
from app.engine.optimizers import PLAIN_SGD
from app.engine.program import CORRECT
from app.engine.setup import Setup
from app.engine.views import ScalerView
from support.oracle import Plain
from tests.engine.test_lab import assert_same
from tests.engine.test_real_loop import both

BF16, FP16 = AmpSpec("bfloat16"), AmpSpec("float16")
SCALED = [*CORRECT, "scaler_update"]


def scaler_of(lab: Lab) -> ScalerView:
    """The Session's GradScaler store (a session with one)."""
    scaler = lab.view()["scaler"]
    assert scaler is not None
    return scaler


@pytest.mark.parametrize("scenario", ["neuron", "moons"])
def test_bfloat16_losses_gradients_and_params_equal_plain_pytorch(scenario: str) -> None:
    lr = 0.05 if scenario == "neuron" else 0.3
    moons = {"dtype": "float32"} if scenario == "moons" else {}
    lab = Lab(Setup(scenario, lr, 0, PLAIN_SGD, amp=BF16, **moons))  # type: ignore[arg-type]
    plain = Plain(scenario, lr, 0, dtype=torch.float32, amp="bfloat16")
    losses = []
    for _ in range(12):
        for entry in CORRECT:
            plain.line(entry)
            lab.run_line(entry)
            assert_same(lab, plain)  # params, .grad and the loss, bit for bit
        assert plain.loss is not None
        losses.append(plain.loss.item())
    assert [h["loss"] for h in lab.history] == losses
    snap = lab.view()
    assert snap["amp"] == {"dtype": "bfloat16", "scaler": False} and snap["scaler"] is None
    # the weights stay float32, the output is bfloat16, the loss float32
    assert {p["dtype"] for p in snap["params"]} == {"float32"}
    assert (snap["graph"]["out_dtype"], snap["loss_dtype"]) == ("bfloat16", "float32")
    assert snap["code"][:2] == [
        'with torch.autocast("cpu", dtype=torch.bfloat16): out = model(X)',
        'with torch.autocast("cpu", dtype=torch.bfloat16): loss = loss_fn(out, y)',
    ]
    # differs from float32: bfloat16 keeps 8 bits of mantissa
    if scenario == "neuron":
        assert losses[1] == pytest.approx(0.55769, abs=1e-5)


def test_the_graph_shows_each_nodes_dtype_under_autocast() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=BF16))
    lab.run_line("forward")
    lab.run_line("loss")
    nodes = {n["label"]: n["dtype"] for n in lab.view()["graph"]["nodes"]}
    assert nodes["MseLossBackward0"] == "float32"
    assert nodes["AddmmBackward0"] == "bfloat16"  # the Linear ran in bfloat16
    assert nodes["AccumulateGrad: weight"] == nodes["AccumulateGrad: bias"] == "float32"
    assert "ToCopyBackward0" in nodes  # the casts autocast inserted


def test_float16_scaler_skips_the_first_steps_while_the_scale_comes_down() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=FP16))
    plain = Plain("neuron", 0.05, 0, dtype=torch.float32, amp="float16")
    assert lab.program == SCALED
    snap = lab.view()
    assert snap["code"][3:] == [
        "scaler.scale(loss).backward()",
        "scaler.step(optimizer)",
        "scaler.update()",
    ]
    assert snap["scaler"] == {
        "scale": 65536.0,
        "growth_tracker": 0,
        "skipped_steps": 0,
        "found_inf": None,
    }
    scales, skipped, writes = [], [], []
    for _ in range(8):
        for entry in SCALED:
            plain.line(entry)
            lab.run_line(entry)
            assert_same(lab, plain)
            assert lab.amp.scaler is not None
            assert lab.amp.scaler.state_dict() == plain.scaler.state_dict()
            if entry == "step":
                assert lab.last is not None
                writes.append(lab.last["writes"])
                skipped.append(scaler_of(lab)["found_inf"])
        scales.append(scaler_of(lab)["scale"])
    assert scales == [32768.0, 16384.0, 8192.0, 4096.0, 2048.0, 2048.0, 2048.0, 2048.0]
    assert skipped == [True] * 5 + [False] * 3
    assert writes[0] == ["scaler"]  # a skipped step moves no parameter
    assert writes[-1] == ["params", "scaler"]
    scaler = scaler_of(lab)
    assert scaler["skipped_steps"] == 5 and scaler["growth_tracker"] == 3
    assert [h["loss"] for h in lab.history][:6] == [18.5] * 6


def test_float16_without_a_scaler_is_the_scaled_run_five_iterations_early() -> None:
    """What the preset's explanation says: nothing underflows on the worked example, and a
    power-of-two scale is exact, so the scaled run gives the same numbers, 5 iterations late."""
    unscaled = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=AmpSpec("float16", scaler=False)))
    scaled = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=FP16))
    plain32 = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    assert unscaled.view()["preset"] == "float16_without_scaler"
    assert scaled.view()["preset"] == "correct"
    for lab in (unscaled, scaled, plain32):
        lab.run(25)
    a = [h["loss"] for h in unscaled.history]
    b = [h["loss"] for h in scaled.history]
    assert b[5:] == a[:20]
    assert a[1] == pytest.approx(0.55404, abs=1e-5)
    assert plain32.history[1]["loss"] == pytest.approx(0.55219, abs=1e-5)
    plain = Plain("neuron", 0.05, 0, dtype=torch.float32, amp="float16", grad_scaler=False)
    fresh = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=AmpSpec("float16", scaler=False)))
    both(list(CORRECT), fresh, plain, times=10)


def test_the_scaler_refuses_in_pytorchs_words_and_changes_nothing() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=FP16))
    for entry in ("forward", "loss", "backward", "step"):
        lab.run_line(entry)
    before = lab.view()
    with pytest.raises(LineError, match=r"step\(\) has already been called") as caught:
        lab.run_line("step")
    assert caught.value.torch_error
    assert lab.view()["scaler"] == before["scaler"]
    lab.run_line("scaler_update")
    with pytest.raises(LineError, match="No inf checks were recorded prior to update"):
        lab.run_line("scaler_update")
    with pytest.raises(LineError, match="needs a GradScaler"):
        Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=BF16)).run_line("scaler_update")


@pytest.mark.parametrize(
    ("scenario", "options"), [("moons", {}), ("parabola", {}), ("moons", {"dtype": "float64"})]
)
def test_amp_on_a_float64_model_is_refused(scenario: str, options: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="amp needs a float32 model: this one is float64"):
        Lab(Setup(scenario, 0.1, 0, PLAIN_SGD, amp=BF16, **options))  # type: ignore[arg-type]


def test_capture_and_restore_carry_the_scaler_mid_iteration() -> None:
    """After scaler.step and before update: the stage and what unscale found are state too."""
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=FP16))
    lab.run(2)
    for _ in range(5):  # forward, loss, zero_grad, backward, step
        lab.next()
    saved = lab.capture()
    lab.run(3)
    after = lab.view()
    lab.restore(saved, whole=True)
    assert lab.view()["scaler"] == {
        "scale": 16384.0,
        "growth_tracker": 0,
        "skipped_steps": 3,
        "found_inf": True,
    }
    lab.run(3)
    assert lab.view()["scaler"] == after["scaler"]
    assert lab.view()["params"] == after["params"]


def test_a_checkpoint_holds_the_scaler_and_a_model_only_one_starts_it_over() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, amp=FP16))
    lab.run(7)
    assert scaler_of(lab)["scale"] == 2048.0
    lab.run_line("checkpoint")
    ckpt = lab.view()["ckpt"]
    assert ckpt is not None and ckpt["keys"] == ["model", "optimizer", "scaler"]
    assert lab.view()["code"][3] == "scaler.scale(loss).backward()"
    lab.run_line("resume")
    assert scaler_of(lab)["scale"] == 2048.0
    lab.run_line("checkpoint(model_only=True)")
    lab.run_line("resume")  # a fresh scaler: 2**16 again, and the first steps skipped again
    assert scaler_of(lab)["scale"] == 65536.0
    plain = Plain("neuron", 0.05, 0, dtype=torch.float32, amp="float16")
    for _ in range(7):
        for entry in SCALED:
            plain.line(entry)
    for entry in ("checkpoint", "resume", "checkpoint(model_only=True)", "resume"):
        plain.line(entry)
    assert_same(lab, plain)
    both(SCALED, lab, plain, times=3)
    # near the minimum the scaled gradients no longer overflow: the scale stays
    assert scaler_of(lab)["scale"] == plain.scaler.get_scale() == 65536.0
