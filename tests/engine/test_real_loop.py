"""The rest of the real loop against plain PyTorch, bit for bit: clipping, schedulers, train and
eval (dropout, BatchNorm), logging the loss, checkpoints and resuming, softmax before the loss."""

from __future__ import annotations

import threading
import warnings
from typing import Any

import pytest
import torch

from app.engine import Lab, LineError
from app.engine.amp import AmpSpec
from app.engine.optimizers import PLAIN_SGD, OptimizerSpec, SchedulerSpec
from app.engine.program import CORRECT, PRESETS
from app.engine.setup import Setup
from support.oracle import Plain
from tests.engine.test_lab import assert_same

BY_NAME = {p.name: p for p in PRESETS}
ADAM = OptimizerSpec("adam")


def both(program: list[str], lab: Lab, plain: Plain, times: int = 1) -> list[list[str]]:
    """Run the program on both, line by line, checking after each; the Lab's warnings."""
    said = []
    for _ in range(times):
        for entry in program:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                plain.line(entry)
            lab.run_line(entry)
            assert lab.last is not None
            assert lab.last["warnings"] == [str(w.message) for w in caught], entry
            said.append(lab.last["warnings"])
            assert_same(lab, plain)
    return said


def loss_nodes(tensor: torch.Tensor, name: str) -> int:
    """How many loss graphs a tensor keeps alive: its reachable ``name`` nodes (plain walk)."""
    seen, stack, count = set(), [tensor.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        count += type(node).__name__ == name
        stack += [n for n, _ in node.next_functions]
    return count


@pytest.mark.parametrize("scenario", ["neuron", "moons"])
def test_clip_grad_norm_measures_and_scales_like_pytorch(scenario: str) -> None:
    lr = 0.05 if scenario == "neuron" else 0.3
    program = ["forward", "loss", "zero_grad", "backward", "clip_grad_norm", "step"]
    lab, plain = (
        Lab(Setup(scenario, lr, 0, PLAIN_SGD, max_norm=0.5)),
        Plain(scenario, lr, 0, max_norm=0.5),
    )
    for _ in range(3):
        both(program[:4], lab, plain)
        unclipped = torch.cat([p.grad.flatten() for p in lab.named.values()])  # type: ignore[union-attr]
        both(["clip_grad_norm"], lab, plain)
        assert plain.norm is not None and lab.last is not None
        assert lab.last["result"] == plain.norm.item()
        assert lab.last["result"] == pytest.approx(unclipped.norm().item())
        assert lab.last["scaled"] == (plain.norm.item() > 0.5)
        assert lab.last["writes"] == (["grad"] if lab.last["scaled"] else [])
        both(["step"], lab, plain)
    # the worked example: (-23.5, -8) has norm 24.82, scaled to 0.5
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, max_norm=0.5))
    for line in ("forward", "loss", "backward"):
        lab.run_line(line)
    lab.run_line("clip_grad_norm")
    g = torch.cat([p.grad.flatten() for p in lab.named.values()])  # type: ignore[union-attr]
    assert g.norm().item() == pytest.approx(0.5, rel=1e-5)


def test_clip_before_backward_clips_nothing_or_stale_buffers() -> None:
    preset = list(BY_NAME["clip_before_backward"].program)
    lab, plain = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD)), Plain("neuron", 0.05)
    lab.set_program(preset)
    both(preset[:4], lab, plain)
    assert lab.last is not None and lab.last["result"] == 0.0 and lab.last["scaled"] is False
    assert lab.last["writes"] == []
    both(preset[4:], lab, plain)
    assert lab.named["weight"].item() == pytest.approx(1.175)  # the whole unclipped step
    # without zero_grad it clips the stale buffers of the last iteration
    lab, plain = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD)), Plain("neuron", 0.05)
    stale = ["forward", "loss", "clip_grad_norm", "backward", "step"]
    both(stale, lab, plain, times=3)


@pytest.mark.parametrize(
    "spec", [{"kind": "step", "step_size": 2, "gamma": 0.5}, {"kind": "cosine", "T_max": 4}]
)
def test_scheduler_lr_after_each_step_and_the_warning(spec: dict[str, Any]) -> None:
    program = ["forward", "loss", "zero_grad", "backward", "step", "scheduler_step"]
    scheduler = SchedulerSpec.read(spec)
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, scheduler=scheduler))
    plain = Plain("moons", 0.3, 0, scheduler=spec)
    said = both(program, lab, plain, times=6)
    assert all(w == [] for w in said)
    lab2 = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, scheduler=scheduler))
    plain2 = Plain("moons", 0.3, 0, scheduler=spec)
    lrs = []
    for _ in range(6):
        both(program, lab2, plain2)
        lrs.append(lab2.lr)
        assert lab2.lr == plain2.optimizer.param_groups[0]["lr"]
        assert lab2.view()["lr"] == lab2.lr
    if spec["kind"] == "step":
        assert lrs == [0.3, 0.15, 0.15, 0.075, 0.075, 0.0375]
    else:
        assert lrs[1] == pytest.approx(0.15) and lrs[3] == pytest.approx(0.0, abs=1e-12)
    # before the first optimizer.step: PyTorch's own warning, in its words
    preset = list(BY_NAME["scheduler_before_step"].program)
    lab, plain = (
        Lab(Setup("moons", 0.3, 0, PLAIN_SGD, scheduler=scheduler)),
        Plain("moons", 0.3, 0, scheduler=spec),
    )
    said = both(preset, lab, plain, times=3)
    warned = said[preset.index("scheduler_step")]
    assert len(warned) == 1 and warned[0].startswith(
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`."
    )
    assert sum(len(w) for w in said) == 1  # only the first time


def test_scheduler_step_without_a_scheduler_is_refused() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    with pytest.raises(LineError, match="needs a scheduler"):
        lab.run_line("scheduler_step")


def test_dropout_masks_equal_plain_pytorchs() -> None:
    """p = 0.5: after 10 iterations the parameters are plain PyTorch's, bit for bit (the
    masks were the same), and not those of a loop without dropout."""
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, dropout=0.5))
    plain = Plain("moons", 0.3, 0, dropout=0.5)
    both(list(CORRECT), lab, plain, times=10)
    without = Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    without.run(10)
    assert not torch.equal(lab.named["0.weight"], without.named["0.weight"])
    # eval: no masks drawn, the generator untouched
    before = lab.rng
    both(["eval", "forward"], lab, plain)
    assert lab.rng is not None and before is not None and torch.equal(lab.rng, before)
    assert lab.view()["mode"] == "eval"


def test_batchnorm_running_statistics_change_only_in_train_mode() -> None:
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, batchnorm=True, dropout=0.2))
    plain = Plain("moons", 0.3, 0, batchnorm=True, dropout=0.2)
    both(list(CORRECT), lab, plain, times=3)

    def buffers() -> dict[str, Any]:
        return {b["name"]: b["value"] for b in lab.view()["buffers"]}

    theirs = {n: b.tolist() for n, b in plain.model.named_buffers()}
    assert buffers() == theirs and buffers()["1.num_batches_tracked"] == 3
    assert lab.last is not None and lab.last["line"] == "step"
    both(["forward"], lab, plain)
    assert lab.last["writes"] == ["graph", "buffers"] and "mode" in lab.last["reads"]
    frozen = buffers()
    preset = list(BY_NAME["eval_while_training"].program)
    both(preset, lab, plain, times=3)
    assert buffers() == frozen  # eval: the running statistics never move
    assert lab.last is not None
    both(["forward"], lab, plain)
    assert lab.last["writes"] == ["graph"] and "buffers" in lab.last["reads"]
    both(["train", *CORRECT], lab, plain)
    assert buffers() != frozen


def test_logging_the_tensor_keeps_every_graph_alive() -> None:
    for scenario, node in (("neuron", "MseLossBackward0"), ("moons", "NllLossBackward0")):
        lr = 0.05 if scenario == "neuron" else 0.3
        preset = list(BY_NAME["log_tensor"].program)
        lab, plain = Lab(Setup(scenario, lr, 0, PLAIN_SGD)), Plain(scenario, lr, 0)
        for i in range(1, 5):
            both(preset, lab, plain)
            running = lab.view()["running_loss"]
            assert running["tensor"] and running["value"] == plain.running_loss.item()
            assert running["graphs"] == loss_nodes(plain.running_loss, node) == i
        # without backward the saved tensors stay too, growing every iteration
        lab, plain = Lab(Setup(scenario, lr, 0, PLAIN_SGD)), Plain(scenario, lr, 0)
        held = []
        for _ in range(3):
            both(["forward", "loss", "log_tensor"], lab, plain)
            held.append(lab.view()["running_loss"]["saved_bytes"])
        assert held[0] > 0 and held[0] < held[1] < held[2]
        # .item(): a float, nothing kept
        lab, plain = Lab(Setup(scenario, lr, 0, PLAIN_SGD)), Plain(scenario, lr, 0)
        both([*CORRECT, "log_item"], lab, plain, times=3)
        running = lab.view()["running_loss"]
        assert running == {
            "value": plain.running_loss,
            "tensor": False,
            "graphs": 0,
            "nodes": 0,
            "saved_bytes": 0,
        }
        assert lab.capture().exact


def test_softmax_before_cross_entropy() -> None:
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, softmax_before_loss=True))
    plain = Plain("moons", 0.3, 0, softmax_before_loss=True)
    both(list(CORRECT), lab, plain, times=5)
    assert lab.view()["code"][1] == "loss = loss_fn(out.softmax(dim=1), y)"
    assert lab.view()["preset"] == "softmax_before_loss"
    right = Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    right.run(5)
    assert lab.loss_value is not None and right.loss_value is not None
    assert lab.loss_value > right.loss_value


@pytest.mark.parametrize("model_only", [False, True])
def test_adam_resumed_with_and_without_optimizer_state(model_only: bool) -> None:
    entry = "checkpoint(model_only=True)" if model_only else "checkpoint"
    lab = Lab(Setup("moons", 0.01, 0, ADAM))
    plain = Plain("moons", 0.01, 0, "adam")
    both(list(CORRECT), lab, plain, times=5)
    both([entry], lab, plain)
    at_checkpoint = lab.view()
    both([*CORRECT, *CORRECT, "resume"], lab, plain)
    snap = lab.view()
    assert snap["params"] == [{**p, "grad": None} for p in at_checkpoint["params"]]
    if not model_only:
        assert snap["optimizer_state"] == at_checkpoint["optimizer_state"]
    assert snap["ckpt"] == {
        "keys": ["model"] if model_only else ["model", "optimizer"],
        "iteration": 5,
        "steps": 5,
    }
    empty = all(row["state"] == {} for row in snap["optimizer_state"])
    assert empty == model_only and all(p["grad"] is None for p in snap["params"])
    losses = []
    for _ in range(4):
        both(list(CORRECT), lab, plain)
        assert plain.loss is not None
        assert lab.loss_value == plain.loss.item()
        losses.append(lab.loss_value)
    assert len(set(losses)) == 4


def test_without_adams_state_the_loss_jumps() -> None:
    """100 iterations of Adam (lr 0.05), checkpoint, resume: without the optimizer state the
    next losses are far above those of the resume with it (the preset's point)."""
    after = {}
    for entry in ("checkpoint", "checkpoint(model_only=True)"):
        lab = Lab(Setup("moons", 0.05, 0, ADAM))
        lab.run(100)
        lab.run_line(entry)
        lab.run_line("resume")
        lab.run(6)
        after[entry] = sum(h["loss"] for h in list(lab.history)[-5:])
    assert after["checkpoint(model_only=True)"] > 1.5 * after["checkpoint"]


def test_resume_without_a_checkpoint_is_refused() -> None:
    with pytest.raises(LineError, match="needs a checkpoint"):
        Lab(Setup("neuron", 0.05, 0, PLAIN_SGD)).run_line("resume")


@pytest.mark.parametrize("name", [p.name for p in PRESETS if p.setup])
def test_each_new_preset_with_its_setup_equals_plain_pytorch(name: str) -> None:
    setup = dict(BY_NAME[name].setup)
    spec = setup.get("scheduler")
    kwargs = {
        k: v for k, v in setup.items() if k in ("dropout", "batchnorm", "softmax_before_loss")
    }
    adam = setup.get("optimizer") == {"kind": "adam"}
    scenario = str(setup.get("scenario", "moons"))
    amp = setup.get("amp")
    scaler = bool(setup.get("grad_scaler", True))
    lab = Lab(
        Setup(
            scenario,
            0.3,
            0,
            ADAM if adam else OptimizerSpec(),
            scheduler=SchedulerSpec.read(spec),  # type: ignore[arg-type]
            amp=None if amp is None else AmpSpec(amp, scaler),  # type: ignore[arg-type]
            **kwargs,  # type: ignore[arg-type]
        )
    )
    plain = Plain(scenario, 0.3, 0, "adam" if adam else "sgd", scheduler=spec,  # type: ignore[arg-type]
                  amp=amp, grad_scaler=scaler, **kwargs)  # type: ignore[arg-type]  # fmt: skip
    program = list(BY_NAME[name].program)
    lab.set_program(program)
    both(program, lab, plain, times=4)
    assert lab.view()["preset"] == name


def test_float32_moons() -> None:
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, dtype="float32"))
    plain = Plain("moons", 0.3, 0, dtype=torch.float32)
    both(list(CORRECT), lab, plain, times=3)
    assert lab.view()["params"][0]["dtype"] == "float32"


def test_two_dropout_sessions_interleaved_give_what_each_gives_alone() -> None:
    def alone(seed: int) -> list[Any]:
        lab = Lab(Setup("moons", 0.3, seed, PLAIN_SGD, dropout=0.5))
        lab.run(6)
        params: list[Any] = lab.view()["params"]
        return params

    expected = [alone(0), alone(1)]
    a, b = (
        Lab(Setup("moons", 0.3, 0, PLAIN_SGD, dropout=0.5)),
        Lab(Setup("moons", 0.3, 1, PLAIN_SGD, dropout=0.5)),
    )
    for _ in range(6 * 5):  # line by line, one then the other, torch's generator used between
        a.next()
        torch.rand(3)
        b.next()
    assert [a.view()["params"], b.view()["params"]] == expected
    # and in two threads at once
    c, d = (
        Lab(Setup("moons", 0.3, 0, PLAIN_SGD, dropout=0.5)),
        Lab(Setup("moons", 0.3, 1, PLAIN_SGD, dropout=0.5)),
    )
    threads = [threading.Thread(target=lab.run, args=(6,)) for lab in (c, d)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [c.view()["params"], d.view()["params"]] == expected


def test_invalid_setups_are_refused_by_the_engine() -> None:
    with pytest.raises(ValueError, match="moons"):
        Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, dropout=0.5))
    with pytest.raises(ValueError, match="max_norm"):
        Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, max_norm=0))


def test_the_output_view_touches_no_store() -> None:
    """It runs the model in eval mode: no mask drawn, no BatchNorm statistic moved."""
    lab = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, dropout=0.5, batchnorm=True))
    lab.run(1)
    before = lab.capture()
    lab.output(10)
    after = lab.capture()
    assert lab.model.training and before.rng is not None and after.rng is not None
    assert torch.equal(before.rng, after.rng)
    for name, b in before.buffers.items():
        assert torch.equal(b, after.buffers[name]), name


def test_reset_starts_the_schedule_again() -> None:
    lab = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, scheduler=SchedulerSpec("cosine", T_max=4)))
    lab.set_program([*CORRECT, "scheduler_step"])
    lab.run(2)
    assert lab.lr < 0.05
    lab.reset()
    assert lab.lr == 0.05
    again = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD, scheduler=SchedulerSpec("cosine", T_max=4)))
    again.set_program([*CORRECT, "scheduler_step"])
    lab.run(3)
    again.run(3)
    assert lab.view() == again.view()
