"""``record`` on notebook cells that train through real frameworks: a model defined and built in
the cell, trained by ``accelerate``'s gradient accumulation, and a tiny GPT-2 built from a config
and trained by Hugging Face's ``Trainer.train()`` (the loop inside the library, not the cell).

The recorded run ends bit for bit where the same cell run plainly ends; every parameter the
cell trains is shown, under a name of the cell's namespace (``model.…``), no name twice; and
each statement's marks say what happened: accelerate's ``optimizer.step()`` writes the
parameters only on the micro-batch where it really steps (it does nothing on the others), a
backward writes gradients and never the parameters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from accelerate.state import AcceleratorState, GradientState

from loop_stepper.recorder import Trace, record
from loop_stepper.stores import tensors

ACCELERATE_CELL = """\
import torch
from accelerate import Accelerator
from torch import nn
from torch.nn import functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(6, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))


torch.manual_seed(0)
X, y = torch.randn(16, 6), torch.randn(16, 1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=4)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
accelerator = Accelerator(gradient_accumulation_steps=2, cpu=True)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for xb, yb in loader:
    with accelerator.accumulate(model):
        loss = F.mse_loss(model(xb), yb)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""

TRAINER_CELL = """\
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self):
        self.ids = torch.randint(0, 100, (8, 16), generator=torch.Generator().manual_seed(11))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


torch.manual_seed(0)
config = GPT2Config(
    n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=32, bos_token_id=0, eos_token_id=0
)
model = GPT2LMHeadModel(config)
args = TrainingArguments(
    output_dir=OUTPUT_DIR, max_steps=2, per_device_train_batch_size=2,
    gradient_accumulation_steps=2, max_grad_norm=1.0, report_to=[], use_cpu=True,
    save_strategy="no", logging_strategy="no", disable_tqdm=True,
)
trainer = Trainer(model=model, args=args, train_dataset=Tokens())
trainer.train()
"""


@pytest.fixture(autouse=True)
def fresh_accelerator() -> Iterator[None]:
    """One intra-op thread (the machine's cores are shared), and accelerate's process-wide
    state reset after each test, as accelerate's own tests do."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()


def plain(source: str, space: dict[str, Any]) -> dict[str, Any]:
    """The cell run as Python runs it, without the recorder."""
    exec(compile(source, "<plain cell>", "exec"), space)
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    return space


def line_of(source: str, text: str) -> int:
    (number,) = [n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text]
    return number


def shown_after(trace: Trace, line: int) -> list[list[str]]:
    """The names each moment shows, from the moment the statement at ``line`` finished on."""
    first = next(i for i, m in enumerate(trace.moments) if m["line"] == line)
    return [[p["name"] for p in m["params"]] for m in trace.moments[first:]]


def test_an_accelerate_loop_in_a_cell_ends_where_a_plain_run_ends() -> None:
    expected = plain(ACCELERATE_CELL, {"__name__": "__main__"})["model"]
    space: dict[str, Any] = {"__name__": "__main__"}
    trace = record(ACCELERATE_CELL, space, iterations=None)
    assert trace.error is None and trace.ended == "end", trace.error
    model = space["model"]
    after = dict(model.named_parameters())
    assert after.keys() == {"hidden.weight", "hidden.bias", "out.weight", "out.bias"}
    for name, p in expected.named_parameters():
        assert torch.equal(after[name], p), name
    # the names: every parameter the loop trains, by the namespace's name, none twice
    trained = {f"model.{n}" for n in after}
    for names in shown_after(trace, line_of(ACCELERATE_CELL, "model = Net()")):
        assert sorted(names) == sorted(set(names)) == sorted(trained), names
    last = {p["name"]: p for p in trace.moments[-1]["params"]}
    for name, p in after.items():
        assert last[f"model.{name}"]["value"] == p.tolist()


def test_accelerates_skipped_steps_write_nothing_and_its_real_steps_the_parameters() -> None:
    trace = record(ACCELERATE_CELL, {"__name__": "__main__"}, iterations=None)
    assert trace.error is None, trace.error
    lines = {
        what: line_of(ACCELERATE_CELL, text)
        for what, text in {
            "backward": "accelerator.backward(loss)",
            "step": "optimizer.step()",
            "zero_grad": "optimizer.zero_grad()",
        }.items()
    }
    at = {what: [m for m in trace.moments if m["line"] == line] for what, line in lines.items()}
    writes = {what: [m["writes"] for m in moments] for what, moments in at.items()}
    assert len(writes["backward"]) == len(writes["step"]) == 4  # 16 rows, batches of 4
    assert all("grad" in w and "params" not in w for w in writes["backward"])
    # the prepared optimizer steps (and clears) on every second micro-batch only
    assert ["params" in w for w in writes["step"]] == [False, True, False, True]
    assert ["grad" in w for w in writes["zero_grad"]] == [False, True, False, True]
    assert all(w == [] for w in writes["step"][::2] + writes["zero_grad"][::2])
    # a real step read the gradients; a skipped one read nothing
    assert ["grad" in m["reads"] for m in at["step"]] == [False, True, False, True]


def test_a_trainer_train_call_in_a_cell_ends_where_a_plain_run_ends(tmp_path: Any) -> None:
    source = TRAINER_CELL.replace("OUTPUT_DIR", repr(str(tmp_path)))
    expected = plain(source, {"__name__": "__main__"})["model"]
    space: dict[str, Any] = {"__name__": "__main__"}
    trace = record(source, space, iterations=None)
    assert trace.error is None and trace.ended == "end", trace.error
    model = space["model"]
    assert space["trainer"].state.global_step == 2
    for (name, p), (_, q) in zip(
        model.named_parameters(), expected.named_parameters(), strict=True
    ):
        assert torch.equal(p, q), name
    # every parameter tensor once (the tied lm_head.weight is wte.weight), named from `model`
    distinct = {id(p): p for p in model.parameters()}
    names = shown_after(trace, line_of(source, "model = GPT2LMHeadModel(config)"))
    for shown in names:
        assert len(shown) == len(set(shown)) == len(distinct), shown
        assert all(n.startswith("model.") for n in shown), shown
    last = {p["name"]: p for p in trace.moments[-1]["params"]}
    reached = {id(model.get_parameter(name.removeprefix("model."))) for name in last}
    assert reached == set(distinct)
    for name, view in last.items():
        value = model.get_parameter(name.removeprefix("model."))
        assert view["value"] == tensors.shown(value), name  # its elements, or their summary


LORA_CELL = TRAINER_CELL.replace(
    "args = TrainingArguments(",
    """\
model.requires_grad_(False)


class LoRA(torch.nn.Module):
    def __init__(self, base, rank=4):
        super().__init__()
        self.base = base
        self.lora_A = torch.nn.Parameter(torch.randn(rank, base.weight.shape[0]) / 8)
        self.lora_B = torch.nn.Parameter(torch.zeros(base.weight.shape[1], rank))

    def forward(self, x):
        return self.base(x) + x @ self.lora_A.T @ self.lora_B.T


for block in model.transformer.h:
    block.attn.c_attn = LoRA(block.attn.c_attn)
args = TrainingArguments(""",
)


def test_a_trainer_with_a_lora_adapter_shows_the_adapter_it_trains(tmp_path: Any) -> None:
    source = LORA_CELL.replace("OUTPUT_DIR", repr(str(tmp_path)))
    expected = plain(source, {"__name__": "__main__"})["model"]
    space: dict[str, Any] = {"__name__": "__main__"}
    trace = record(source, space, iterations=None)
    assert trace.error is None and trace.ended == "end", trace.error
    model = space["model"]
    for (name, p), (_, q) in zip(
        model.named_parameters(), expected.named_parameters(), strict=True
    ):
        assert torch.equal(p, q), name
    adapters = {f"model.transformer.h.{i}.attn.c_attn.lora_{x}" for i in range(2) for x in "AB"}
    for shown in shown_after(trace, line_of(source, "trainer.train()")):
        assert sorted(shown) == sorted(set(shown)) == sorted(adapters), shown
    last = {p["name"]: p for p in trace.moments[-1]["params"]}
    for name in adapters:
        value = model.get_parameter(name.removeprefix("model."))
        assert last[name]["value"] == tensors.shown(value), name
        assert not torch.equal(value, torch.zeros_like(value))  # B left zero, A moved after
