"""The doctor on Hugging Face's ``Trainer``, for real: a tiny GPT-2 built from a config (no hub,
CPU), trained for four optimizer steps of two accumulated micro-batches each with
``max_grad_norm`` clipping, as ``Trainer._inner_training_loop`` runs it (``training_step`` →
``accelerator.backward(loss / 2)``; on the last micro-batch ``accelerator.clip_grad_norm_`` →
``torch.nn.utils.clip_grad_norm_``, the ``on_pre_optimizer_step`` callbacks, the prepared
optimizer's ``step()``, ``lr_scheduler.step()``, ``model.zero_grad()``, ``on_step_end``).

A correct run, and one with a LoRA-style adapter whose ``B`` starts at zeros (so ``A``'s
gradient is really exactly zero at the first step and is then clipped in place, as under
peft), are named nothing and end bit for bit where the same run without the doctor ends. A
user's script around ``Trainer`` with a bug of its own (in a ``compute_loss`` or
``training_step`` override, or in a callback) is named at that line of the script, and the
same script without the bug is named nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from transformers.pytorch_utils import Conv1D

import loop_stepper
from loop_stepper.doctor.script import ScriptReport, run
from tests.doctor.test_corpus import expected, found, said


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One intra-op thread, as the corpus runs (the machine's cores are shared: a tiny GPT-2
    steps in a fraction of the time), put back after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


STEPS = 4  # optimizer steps of the Trainer (max_steps)
ACCUMULATE = 2


class Tokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    """Random token ids, each row its own labels (the model shifts them): a causal LM's batch."""

    def __init__(self, rows: int = 16, length: int = 16, vocab: int = 100) -> None:
        generator = torch.Generator().manual_seed(11)
        self.ids = torch.randint(0, vocab, (rows, length), generator=generator)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def tiny_gpt2() -> GPT2LMHeadModel:
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2,
        n_embd=32,
        n_head=2,
        vocab_size=100,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def arguments(output_dir: Path) -> TrainingArguments:
    return TrainingArguments(
        output_dir=str(output_dir),
        max_steps=STEPS,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=ACCUMULATE,
        max_grad_norm=1.0,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
    )


class LoRA(nn.Module):
    """A frozen ``Conv1D`` (GPT-2's ``y = x W + b``) plus ``scaling · x Aᵀ Bᵀ``: ``A`` random,
    ``B`` zeros, so the adapter adds exactly nothing at the start and ``A``'s first gradient is
    exactly zero (peft's default LoRA initialisation)."""

    def __init__(self, base: Conv1D, rank: int = 4, alpha: float = 8.0) -> None:
        super().__init__()
        inputs, outputs = base.weight.shape
        self.base = base
        self.lora_A = nn.Parameter(torch.empty(rank, inputs))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_B = nn.Parameter(torch.zeros(outputs, rank))
        self.scaling = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.base(x)
        return out + (x @ self.lora_A.T @ self.lora_B.T) * self.scaling


def with_lora(model: GPT2LMHeadModel) -> GPT2LMHeadModel:
    """Every base weight frozen, every attention's ``c_attn`` wrapped in a ``LoRA``."""
    model.requires_grad_(False)
    for i in range(model.config.n_layer):
        attention = model.get_submodule(f"transformer.h.{i}.attn")
        base = attention.get_submodule("c_attn")
        assert isinstance(base, Conv1D)
        attention.c_attn = LoRA(base)
    return model


def gradient_size(model: nn.Module, name: str) -> float:
    grad = model.get_parameter(name).grad
    assert grad is not None
    return float(grad.abs().sum())


def train(model: GPT2LMHeadModel, output_dir: Path) -> Trainer:
    trainer = Trainer(model=model, args=arguments(output_dir), train_dataset=Tokens())
    trainer.train()
    return trainer


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def assert_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    assert all(torch.equal(a[n], b[n]) for n in a), [n for n in a if not torch.equal(a[n], b[n])]


def test_trainer_with_accumulation_and_clipping_is_named_nothing(tmp_path: Path) -> None:
    plain_model = tiny_gpt2()
    start = snapshot(plain_model)
    train(plain_model, tmp_path / "plain")
    plain = snapshot(plain_model)
    model = tiny_gpt2()
    with loop_stepper.watch() as doctor:
        trainer = train(model, tmp_path / "watched")
    assert doctor.diagnoses == [], doctor.diagnoses
    assert doctor.primary_steps == STEPS == trainer.state.global_step
    assert_equal(snapshot(model), plain)  # the doctor changed no number
    assert all(not torch.equal(plain[n], start[n]) for n in start)  # and every weight moved


def test_trainer_with_a_zero_initialised_lora_adapter_is_named_nothing(tmp_path: Path) -> None:
    plain_model = with_lora(tiny_gpt2())
    start = snapshot(plain_model)
    train(plain_model, tmp_path / "plain")
    plain = snapshot(plain_model)
    model = with_lora(tiny_gpt2())
    assert_equal(snapshot(model), start)
    adapters = [n for n, p in model.named_parameters() if p.requires_grad]
    assert sorted(adapters) == sorted(
        f"transformer.h.{i}.attn.c_attn.lora_{x}" for i in range(2) for x in "AB"
    )
    # B = 0: the adapter adds nothing, so A's gradient is exactly zero at the first step
    model(input_ids=Tokens().ids[:2], labels=Tokens().ids[:2]).loss.backward()
    assert [gradient_size(model, n) == 0 for n in adapters] == [True, False, True, False]
    model.zero_grad()
    with loop_stepper.watch() as doctor:
        train(model, tmp_path / "watched")
    assert doctor.diagnoses == [], doctor.diagnoses
    assert doctor.primary_steps == STEPS
    after = snapshot(model)
    assert_equal(after, plain)
    moved = {n for n in start if not torch.equal(after[n], start[n])}
    assert moved == set(adapters)  # the adapter trained, A too (once B left zero), the base not


BUGGY_TRAINER = """\
# A Trainer subclass with its own compute_loss and a validation callback ({what})
import torch
from torch.nn import functional as F
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

VALID = torch.randint(0, 100, (4, 16), generator=torch.Generator().manual_seed(12))


class Tokens(torch.utils.data.Dataset):
    def __init__(self):
        self.ids = torch.randint(0, 100, (16, 16), generator=torch.Generator().manual_seed(11))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {{"input_ids": self.ids[i], "labels": self.ids[i]}}


class MyTrainer(Trainer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.losses = []
{step}
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        logits = model(input_ids=inputs["input_ids"]).logits[:, :-1]
        labels = inputs["labels"][:, 1:]
{loss}
        return loss


class Validation(TrainerCallback):
    def on_step_end(self, args, state, control, model=None, **kwargs):
        model.eval()
{validation}
        model.train()
        print(f"step {{state.global_step}}: validation loss {{val:.4f}}")
{pre_step}

torch.manual_seed(0)
config = GPT2Config(
    n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=32, bos_token_id=0, eos_token_id=0
)
model = GPT2LMHeadModel(config)
args = TrainingArguments(
    output_dir="{output_dir}", max_steps=4, per_device_train_batch_size=2,
    gradient_accumulation_steps=2, max_grad_norm=1.0, report_to=[], use_cpu=True,
    save_strategy="no", logging_strategy="no", disable_tqdm=True,
)
trainer = MyTrainer(model=model, args=args, train_dataset=Tokens(), callbacks=[Validation()])
trainer.train()
print(len(trainer.losses), "losses kept")
torch.save({{n: p.detach() for n, p in model.named_parameters()}}, "{trained}")
"""

PARTS = {  # what the correct script has in each slot of ``BUGGY_TRAINER``
    "loss": """\
        loss = F.cross_entropy(logits.reshape(-1, 100), labels.reshape(-1))
        self.losses.append(loss.item())""",
    "validation": """\
        with torch.no_grad():
            val = model(input_ids=VALID, labels=VALID).loss.item()""",
    "step": "",
    "pre_step": "",
}
VARIANTS: dict[str, dict[str, str]] = {  # the bug -> the slots it changes
    "correct": {},
    "log_tensor": {
        "loss": """\
        loss = F.cross_entropy(logits.reshape(-1, 100), labels.reshape(-1))
        self.losses.append(loss)  # doctor: log_tensor"""
    },
    "softmax_before_loss": {
        "loss": """\
        probs = F.softmax(logits, dim=-1).reshape(-1, 100)
        loss = F.cross_entropy(probs, labels.reshape(-1))  # doctor: softmax_before_loss
        self.losses.append(loss.item())"""
    },
    "validation_with_grad": {
        "validation": """\
        val = model(input_ids=VALID, labels=VALID).loss  # doctor: validation_with_grad
        val = val.item()"""
    },
    # the habit of a plain loop brought into training_step: the prepared optimizer's
    # zero_grad() runs on the syncing micro-batch, before its backward, and drops the first's
    "accumulation_reset": {
        "step": """\
    def training_step(self, model, inputs, num_items_in_batch=None):
        self.optimizer.zero_grad()  # doctor: accumulation_reset
        return super().training_step(model, inputs, num_items_in_batch)
"""
    },
    # the callback Trainer calls between clipping and optimizer.step(), clearing to zeros
    "zeros": {
        "pre_step": """\
    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        model.zero_grad(set_to_none=False)  # doctor: zeros
"""
    },
}


def doctor_on(
    tmp_path: Path, variant: str, iterations: int | None = None
) -> tuple[Path, ScriptReport]:
    """The script of ``variant``, and the doctor's report on it (``loop-stepper doctor
    SCRIPT``, stopped after ``iterations`` steps if given)."""
    script = tmp_path / f"train_{variant}.py"
    parts = PARTS | VARIANTS[variant]
    source = BUGGY_TRAINER.format(
        what=variant, output_dir=tmp_path / "out", trained=tmp_path / "trained.pt", **parts
    )
    script.write_text(source)
    return script, run(script, [], iterations=iterations)


def test_a_trainer_subclass_keeping_its_loss_tensors_is_named_at_that_line(
    tmp_path: Path,
) -> None:
    script, report = doctor_on(tmp_path, "log_tensor")
    assert report.error is None, said(report)
    assert report.iterations == STEPS
    assert found(report.diagnoses) == expected(script), said(report)
    assert all(d["file"] == str(script) for d in report.diagnoses)


def test_a_compute_loss_feeding_probabilities_is_named_at_that_line(tmp_path: Path) -> None:
    script, report = doctor_on(tmp_path, "softmax_before_loss")
    assert report.error is None, said(report)
    assert found(report.diagnoses) == expected(script), said(report)
    (diagnosis,) = report.diagnoses
    assert diagnosis["evidence"]["min"] >= 0 and diagnosis["evidence"]["max"] <= 1
    assert abs(diagnosis["evidence"]["row_sum"] - 1) < 1e-3


def test_a_validation_callback_building_graphs_is_named_at_its_forward(tmp_path: Path) -> None:
    script, report = doctor_on(tmp_path, "validation_with_grad")
    assert report.error is None, said(report)
    assert found(report.diagnoses) == expected(script), said(report)
    assert report.iterations == STEPS


def test_a_training_step_clearing_the_accumulated_gradient_is_named_at_that_line(
    tmp_path: Path,
) -> None:
    script, report = doctor_on(tmp_path, "accumulation_reset")
    assert report.error is None, said(report)
    assert found(report.diagnoses) == expected(script), said(report)
    (diagnosis,) = report.diagnoses
    assert "model.transformer.h.0.attn.c_attn.weight" in diagnosis["evidence"]["params"]
    assert report.iterations == STEPS


def test_a_callback_clearing_to_zeros_before_the_step_is_named_at_that_line(
    tmp_path: Path,
) -> None:
    """The real ``zeros`` under Trainer, beside the LoRA adapter's real zero gradient above."""
    script, report = doctor_on(tmp_path, "zeros")
    assert report.error is None, said(report)
    assert found(report.diagnoses) == expected(script), said(report)
    assert report.iterations == STEPS
    # AdamW (no weight decay) read zeros at every step: not one weight moved, as it says
    assert_equal(torch.load(tmp_path / "trained.pt"), snapshot(tiny_gpt2()))
    (diagnosis,) = report.diagnoses
    assert diagnosis["evidence"]["momentum_or_decay"] is False
    assert "AdamW moved nothing" in diagnosis["message"]


def test_the_same_subclass_without_the_bug_is_named_nothing(tmp_path: Path) -> None:
    script, report = doctor_on(tmp_path, "correct")
    assert expected(script) == set()
    assert report.error is None, said(report)
    assert report.diagnoses == [], said(report)
    assert report.iterations == STEPS
    trained, start = torch.load(tmp_path / "trained.pt"), snapshot(tiny_gpt2())
    assert all(not torch.equal(trained[n], start[n]) for n in start)


def test_the_doctor_stops_the_trainer_after_the_steps_asked_for(tmp_path: Path) -> None:
    _, report = doctor_on(tmp_path, "correct", iterations=2)
    assert report.error is None, said(report)
    assert report.stopped and report.iterations == 2
    assert report.diagnoses == [] and report.code == 0
