"""The timeline: every recorded answer comes back exactly on a rewind, in any order, from
keyframes in memory or in the store; a session read back from the store stands where it stood,
its autograd graph included."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pydantic_core
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from app.db import Database, SqliteDatabase
from app.engine import Lab, LineError
from app.engine.amp import AmpSpec
from app.engine.entries import ENTRIES
from app.engine.optimizers import PLAIN_SGD, OptimizerSpec, SchedulerSpec
from app.engine.program import CORRECT
from app.log import keyframes
from app.log.records import Setup
from app.log.timeline import KEYFRAME_EVERY, RUN_SPACING, MomentOutOfRange, Timeline, TimelineError
from app.sessions.journal import Journal
from support.oracle import Plain

OPTIMIZERS = [PLAIN_SGD, OptimizerSpec("sgd", momentum=0.9), OptimizerSpec("adam")]
LR = {"neuron": 0.05, "moons": 0.3, "parabola": 0.05}


def answer(timeline: Timeline) -> bytes:
    """The Session as the API sends it, less ``moments`` (which grows as lines run)."""
    data = {k: v for k, v in timeline.view().items() if k != "moments"}
    return pydantic_core.to_json(data, inf_nan_mode="strings")


# the rest of the real loop's setup: any scenario, then moons only
EXTRAS: list[dict[str, Any]] = [
    {},
    {"max_norm": 0.5, "scheduler": SchedulerSpec("step", step_size=1, gamma=0.5)},
    {"scheduler": SchedulerSpec("cosine", T_max=3)},
]
NEURON_EXTRAS: list[dict[str, Any]] = [
    {"amp": AmpSpec("float16")},
    {"amp": AmpSpec("bfloat16"), "max_norm": 0.5},
    {"amp": AmpSpec("float16", scaler=False)},
]
MOONS_EXTRAS: list[dict[str, Any]] = [
    {"dropout": 0.5, "dtype": "float32", "amp": AmpSpec("float16")},
    {"dropout": 0.3, "batchnorm": True},
    {"softmax_before_loss": True, "dtype": "float32", "max_norm": 0.1},
]


def setup(
    scenario: str,
    optimizer: OptimizerSpec = PLAIN_SGD,
    accumulate: int = 1,
    extras: dict[str, Any] | None = None,
) -> Setup:
    model = {k: v for k, v in (extras or {}).items() if k in ("amp", "dtype")}
    lab = Lab(Setup(scenario, LR[scenario], 0, PLAIN_SGD, accumulate=accumulate, **model))
    program = tuple(lab.program)
    return Setup(scenario, LR[scenario], 0, optimizer, accumulate, {}, program, **(extras or {}))


def stored(s: Setup, every: int = 3) -> tuple[Timeline, SqliteDatabase]:
    """A timeline whose older keyframes live only in a real (in-memory SQLite) store."""
    store = SqliteDatabase(":memory:")
    store.create("s", s)
    return Timeline(s, Journal(store, "s"), every=every), store


Action = tuple[str, Any]
ACTIONS = st.one_of(
    st.just(("next", None)),
    st.tuples(st.just("line"), st.sampled_from(list(ENTRIES))),
    st.tuples(st.just("lr"), st.sampled_from([0.01, 0.1, 0.5])),
    st.tuples(st.just("program"), st.lists(st.sampled_from(list(ENTRIES)), min_size=1, max_size=6)),
    st.tuples(st.just("run"), st.integers(1, 3)),
    st.tuples(st.just("rewind"), st.floats(0, 1)),
)


def act(timeline: Timeline, action: Action) -> bool:
    """Do one action; True if it ended with a line that ran (a new newest moment)."""
    kind, arg = action
    try:
        if kind == "next":
            timeline.next()
        elif kind == "line":
            timeline.line(arg)
        elif kind == "lr":
            timeline.set_lr(arg)
        elif kind == "program":
            timeline.set_program(arg)
        elif kind == "run":
            timeline.run(arg)
        else:
            timeline.rewind(int(arg * timeline.moments))
    except LineError:
        return False
    return kind in ("next", "line", "run")


@settings(max_examples=60, deadline=None)
@given(
    scenario=st.sampled_from(["neuron", "moons", "parabola"]),
    optimizer=st.sampled_from(OPTIMIZERS),
    accumulate=st.sampled_from([1, 2]),
    actions=st.lists(ACTIONS, min_size=1, max_size=30),
    seed=st.integers(0, 2**16),
    extra=st.integers(0, len(EXTRAS) + len(MOONS_EXTRAS) + len(NEURON_EXTRAS) - 1),
)
def test_every_moment_comes_back_exactly_in_any_order(
    scenario: str,
    optimizer: OptimizerSpec,
    accumulate: int,
    actions: list[Action],
    seed: int,
    extra: int,
) -> None:
    """Random actions (lines, runs, lr and program changes, rewinds, acting from the past) on
    every scenario, optimizer and setup option (scheduler, max_norm; moons: dropout,
    batchnorm, softmax, float32; neuron and float32 moons: amp, the GradScaler); then rewinds
    in random order give the recorded answers."""
    if scenario == "parabola":
        accumulate = 1
    own = {"moons": MOONS_EXTRAS, "neuron": NEURON_EXTRAS}.get(scenario, [])
    options = [*EXTRAS, *own]
    extras = options[extra % len(options)]
    timeline, store = stored(setup(scenario, optimizer, accumulate, extras))
    answers = {0: answer(timeline)}
    for action in actions:
        at = timeline.moment
        if action[0] != "rewind" and at < timeline.moments:
            for gone in [n for n in answers if n > at]:
                del answers[gone]  # acting from a past moment discards the ones after it
        if act(timeline, action):
            answers[timeline.moment] = answer(timeline)
        elif action[0] == "rewind":
            assert answer(timeline) == answers.setdefault(timeline.moment, answer(timeline))
        store.append("s", timeline.drain())
    order = list(range(timeline.moments + 1))
    random.Random(seed).shuffle(order)
    for n in order:  # a run's inner moments were not answered: the first visit records them
        timeline.rewind(n)
        assert timeline.moment == n
        assert answer(timeline) == answers.setdefault(n, answer(timeline)), n
    # the next line after a rewind (and the changes before it) gives what it gave the first time
    n = random.Random(seed).randint(0, timeline.moments)
    timeline.rewind(n)
    if n < timeline.moments:
        start, end = timeline._seq_of(n) + 1, timeline._seq_of(n + 1)
        for event in timeline.events[start - timeline.first : end + 1 - timeline.first]:
            if event.op == "lr":
                timeline.set_lr(event.lr)
            elif event.op == "program":
                timeline.set_program(list(event.program))
            elif event.ok:
                timeline.next() if event.advance else timeline.line(event.entry)
            else:
                with pytest.raises(LineError):
                    timeline.next() if event.advance else timeline.line(event.entry)
        assert answer(timeline) == answers[n + 1]
    # and a timeline read back from the store stands where this one stands
    store.append("s", timeline.drain())
    again = Timeline.restored(store.load("s"), Journal(store, "s"))
    assert answer(again) == answer(timeline) and again.moments == timeline.moments


def test_random_runs_record_every_line_as_a_moment() -> None:
    """A run of 3 iterations is 15 moments, each the Session after its line."""
    one_by_one, _ = stored(setup("moons", OptimizerSpec("adam")))
    answers = [answer(one_by_one)]
    for _ in range(15):
        one_by_one.next()
        answers.append(answer(one_by_one))
    timeline, _ = stored(setup("moons", OptimizerSpec("adam")))
    timeline.run(3)
    assert timeline.moments == 15
    for n in random.Random(1).sample(range(16), 16):
        timeline.rewind(n)
        assert answer(timeline) == answers[n], n


def test_rewind_rebuilds_the_real_graph() -> None:
    """Back to just after loss: backward then gives the worked example's gradient."""
    timeline, _ = stored(setup("neuron"), every=1)
    timeline.run(2)
    timeline.rewind(7)  # iteration 2: forward, loss
    assert timeline.lab.next_line == "zero_grad"
    graph = timeline.view()["graph"]
    assert graph["status"] == "built" and graph["nodes"][0]["label"] == "MseLossBackward0"
    timeline.next()
    timeline.next()
    grads = [p.grad.item() for p in timeline.lab.named.values() if p.grad is not None]
    assert grads == pytest.approx([-3.875, -1.325], abs=1e-5)


def test_a_spent_graph_fails_in_pytorchs_words_after_a_replay() -> None:
    """backward twice across a keyframe: the stand-in says what the real freed graph says."""
    for scenario in ("neuron", "moons", "parabola"):
        lab = Lab(Setup(scenario, LR[scenario], 0, PLAIN_SGD))
        lab.run(1)
        with pytest.raises(LineError) as real:
            lab.backward()
        timeline, _ = stored(setup(scenario), every=1)
        timeline.run(3)  # keyframes before each forward, after backward freed the loss
        timeline.rewind(11)  # the third forward, the old loss still spent
        timeline.set_program(["backward"])
        with pytest.raises(LineError) as replayed:
            timeline.next()
        assert replayed.value.message == real.value.message


def test_back_and_the_edges() -> None:
    timeline, _ = stored(setup("neuron"))
    with pytest.raises(TimelineError, match="already at the start"):
        timeline.back()
    timeline.run(1)
    timeline.back()
    assert timeline.moment == 4 and timeline.moments == 5
    for bad in (-1, 6):
        with pytest.raises(MomentOutOfRange, match="does not exist"):
            timeline.rewind(bad)
    timeline.line("zero_grad")  # from a past moment: the moments after it are gone
    assert timeline.moment == timeline.moments == 5
    assert [m["line"] for m in timeline.summary()] == [None, *CORRECT[:4], "zero_grad"]


def test_reset_is_a_new_start() -> None:
    timeline, _ = stored(setup("neuron"))
    timeline.run(2)
    timeline.set_lr(0.1)
    timeline.reset()
    assert timeline.moments == 0 and timeline.setup.lr == 0.1
    assert timeline.drain().rebased == timeline.setup
    timeline.run(1)
    timeline.rewind(0)
    assert timeline.view()["params"][0]["value"] == [[0.0]] and timeline.lab.lr == 0.1


def test_a_timeline_keeps_the_newest_moments(make_db: Callable[..., Database]) -> None:
    store = make_db()
    s = setup("neuron")
    store.create("s", s)
    timeline = Timeline(s, Journal(store, "s"), keep=50, every=5)
    answers = {}
    for _ in range(40):
        for _ in range(5):
            timeline.next()
            answers[timeline.moment] = answer(timeline)
            store.append("s", timeline.drain())
    assert timeline.moments == 200 and timeline.first_moment > 0
    assert 50 <= timeline.moments - timeline.first_moment <= 200
    with pytest.raises(MomentOutOfRange, match="no longer kept"):
        timeline.rewind(timeline.first_moment - 1)
    for n in (timeline.first_moment, 150, 199, 200):
        timeline.rewind(n)
        assert answer(timeline) == answers[n], n
    again = Timeline.restored(store.load("s"), Journal(store, "s"))
    assert answer(again) == answers[200]
    again.rewind(again.first_moment)
    assert answer(again) == answers[again.first_moment]
    assert len(again.lab.history) == len(Timeline(s).lab.history) + again.lab.losses


def test_keyframes_round_trip_exactly() -> None:
    lab = Lab(Setup("moons", 0.3, 0, OptimizerSpec("adam"), accumulate=4))
    lab.run(2)
    lab.forward()  # a micro-batch handed out, three pending
    state = lab.capture()
    back = keyframes.decode(keyframes.encode(state))
    for name in state.params:
        assert torch.equal(back.params[name], state.params[name])
    assert back.optimizer["groups"] == state.optimizer["groups"]
    for name, values in state.optimizer["state"].items():
        for key, v in values.items():
            assert torch.equal(back.optimizer["state"][name][key], v), (name, key)
    assert back.batches["batches"]["rng"] == state.batches["batches"]["rng"]
    assert len(back.batches["pending"]) == 3
    fresh = Lab(Setup("moons", 0.3, 0, OptimizerSpec("adam"), accumulate=4))
    fresh.restore(back, whole=True)
    lab.run(2)
    fresh.run(2)
    assert fresh.view()["params"] == lab.view()["params"]


def test_a_graph_built_before_a_restart_backpropagates_after_it(
    make_db: Callable[..., Database],
) -> None:
    """forward and loss, then the process is gone: the log rebuilds the graph, and backward
    gives plain PyTorch's gradients (on either store)."""
    store = make_db()
    s = setup("moons")
    store.create("s", s)
    timeline = Timeline(s, Journal(store, "s"))
    timeline.run(2)
    timeline.next()
    timeline.next()
    store.append("s", timeline.drain())
    again = Timeline.restored(store.load("s"), Journal(store, "s"))
    again.line("backward")
    plain = Plain("moons", 0.3, 0)
    for line in [*CORRECT, *CORRECT, "forward", "loss", "backward"]:
        plain.line(line)
    for p, q in zip(again.lab.named.values(), plain.model.parameters(), strict=True):
        assert p.grad is not None and q.grad is not None and torch.equal(p.grad, q.grad)


def test_new_stores_round_trip_exactly() -> None:
    """Scheduler, BatchNorm buffers, mode, the session's RNG, ckpt and running_loss (float)
    come back from bytes, and the Lab then goes on as the original does."""
    extras: dict[str, Any] = {
        "scheduler": SchedulerSpec("step", step_size=2, gamma=0.5),
        "dropout": 0.5,
        "batchnorm": True,
    }
    s = setup("moons", OptimizerSpec("adam"), 1, extras)
    lab = Lab(s)
    program = [*CORRECT, "scheduler_step", "log_item", "checkpoint", "eval"]
    lab.set_program(program)
    lab.run(3)
    state = lab.capture()
    assert state.exact and state.ckpt is not None and state.rng is not None
    back = keyframes.decode(keyframes.encode(state))
    fresh = Lab(s)
    fresh.restore(back, whole=True)
    assert answer_of(fresh) == answer_of(lab)
    for entry in ["train", "resume", *program, *program]:
        lab.run_line(entry)
        fresh.run_line(entry)
        assert answer_of(fresh) == answer_of(lab), entry


def test_the_scaler_round_trips_exactly_and_through_the_setups_json() -> None:
    """Mid-iteration (after scaler.step, before update) and with a checkpoint holding the
    scaler's state_dict: bytes, then a Lab built from the Setup's JSON, goes on the same."""
    s = setup("neuron", extras={"amp": AmpSpec("float16")})
    assert Setup.from_json(s.to_json()) == s
    assert s.to_json()["amp"] == {"dtype": "float16", "scaler": True}
    lab = Lab(s)
    lab.run(3)
    lab.run_line("checkpoint")
    for _ in range(5):
        lab.next()  # up to scaler.step
    state = lab.capture()
    assert state.scaler is not None and state.scaler["stage"] != 0
    back = keyframes.decode(keyframes.encode(state))
    fresh = Lab(Setup.from_json(s.to_json()))
    fresh.restore(back, whole=True)
    assert answer_of(fresh) == answer_of(lab)
    for entry in ["scaler_update", "resume", *CORRECT, "scaler_update", *CORRECT]:
        lab.run_line(entry)
        fresh.run_line(entry)
        assert answer_of(fresh) == answer_of(lab), entry


def answer_of(lab: Lab) -> bytes:
    """The Lab's answer less its graph (a restore has none until the next forward) and
    its history (the timeline keeps the loss points)."""
    data = {k: v for k, v in lab.view().items() if k not in ("graph", "history")}
    return pydantic_core.to_json(data, inf_nan_mode="strings")


def test_a_tensor_running_loss_reads_the_same_after_a_keyframe_from_the_store() -> None:
    """Found by the random test: with accumulation a micro-batch is a view of the batch, but a
    keyframe read back from the store holds a copy of just its rows; the bytes a tensor
    running_loss keeps saved must not depend on where the keyframe came from."""
    timeline, store = stored(setup("neuron", PLAIN_SGD, 2))
    timeline.run(1)
    timeline.rewind(6)  # from the keyframe in memory
    timeline.line("log_tensor")
    store.append("s", timeline.drain())
    again = Timeline.restored(store.load("s"), Journal(store, "s"))  # from the store's
    held = again.view()["running_loss"]
    assert held == timeline.view()["running_loss"]
    assert held["saved_bytes"] == 32  # 4 saved tensors of 2 float32 numbers
    assert answer(again) == answer(timeline)


def test_running_loss_after_a_rewind_adds_the_real_loss_not_a_stand_in() -> None:
    """Found by the random test: back to right after a forward whose loss was already spent,
    the Lab stood on a keyframe's stand-in loss; ``running_loss += loss`` then kept the
    stand-in's graph instead of the real one. The line replays from a keyframe that has the
    real loss first: the answer is the one a replay of the log (the store's) gives."""
    timeline, store = stored(setup("neuron", PLAIN_SGD, 2))
    timeline.run(2)
    store.append("s", timeline.drain())
    timeline.rewind(13)  # right after the second iteration's second forward
    timeline.line("log_tensor")  # its loss is the first micro-batch's, spent by backward
    store.append("s", timeline.drain())
    first = answer(timeline)
    again = Timeline.restored(store.load("s"), Journal(store, "s"))
    assert answer(again) == first
    timeline.rewind(0)
    timeline.rewind(14)
    assert answer(timeline) == first
    assert timeline.view()["running_loss"]["nodes"] == 7  # the real loss's graph


def test_a_rewind_forward_onto_running_loss_adds_the_real_loss_not_a_stand_in() -> None:
    """Found by the random test: a rewind to moment 7 left the Lab on a keyframe's stand-in
    loss; the rewind to 8 went on from there and ``running_loss += loss`` kept the stand-in's
    graph (4 nodes) instead of the first iteration's real loss (6)."""
    timeline, _ = stored(setup("neuron"))
    timeline.run(1)
    timeline.next()  # forward
    timeline.set_program(["forward"])
    timeline.next()
    timeline.line("log_tensor")  # the loss of iteration 1, spent by its backward
    first = answer(timeline)
    assert timeline.view()["running_loss"]["nodes"] == 6
    timeline.rewind(7)
    timeline.rewind(8)
    assert answer(timeline) == first


def test_a_graph_of_the_model_before_a_resume_keeps_its_names() -> None:
    """Found by the random test: the graph of a forward before two resumes named its leaves
    ``weight`` and ``bias`` when it was built, and ``tensor`` when a rewind walked it again
    (the names were kept only for the last model's and the one before's parameters)."""
    timeline, _ = stored(setup("neuron"))
    timeline.next()  # forward: the graph of the model at creation
    timeline.set_program(["checkpoint", "resume"])
    timeline.run(2)  # two resumes: two new models
    first = answer(timeline)
    labels = [node["label"] for node in timeline.view()["graph"]["nodes"]]
    assert labels == [
        "AddmmBackward0",
        "AccumulateGrad: bias",
        "TBackward0",
        "AccumulateGrad: weight",
    ]
    for n in (4, 2, 1, 0, 5):
        timeline.rewind(n)
    assert answer(timeline) == first


def test_a_tensor_running_loss_is_never_a_keyframe() -> None:
    """Its graphs cannot be captured: the timeline takes no keyframe then, and a rewind
    replays from an exact one (here the start) to the same answer."""
    timeline, _ = stored(setup("neuron"), every=1)
    timeline.set_program([*CORRECT, "log_tensor"])
    answers = []
    for _ in range(12):
        timeline.next()
        answers.append(answer(timeline))
    assert not timeline.lab.capture().exact
    assert [s for s in timeline.keyframes if s >= 0] == [0]  # before the first forward
    for n in (3, 12, 7):
        timeline.rewind(n)
        assert answer(timeline) == answers[n - 1]
    assert timeline.view()["running_loss"]["graphs"] == 1


def test_a_program_given_at_creation_survives_a_rewind_to_the_start() -> None:
    """The start keyframe holds the setup's program, not the Lab's default one (the Lab's own
    initial state is captured before the setup sets its program)."""
    program = ("forward", "loss", "zero_grad", "backward", "step", "backward")
    t = Timeline(Setup("neuron", 0.05, 0, PLAIN_SGD, program=program))
    for _ in range(4):
        t.next()
    t.rewind(0)
    assert t.lab.program == list(program) and t.lab.next_line == "forward"
    for _ in range(5):
        t.next()
    assert t.lab.next_line == "backward"  # the sixth line, not a wrapped-around forward


def test_a_run_takes_keyframes_further_apart_than_clicks() -> None:
    """A run's keyframes are RUN_SPACING times further apart (taking them was a quarter of a
    run's time); lines clicked one by one keep KEYFRAME_EVERY; every moment still comes back
    exactly."""
    timeline, store = stored(setup("moons"), every=KEYFRAME_EVERY)
    timeline.run(30)  # 150 events
    spacing = KEYFRAME_EVERY * RUN_SPACING
    assert sorted(timeline.keyframes) == [-1, *range(spacing - 1, 149, spacing)]  # before a forward
    for _ in range(25):
        timeline.next()
    assert sorted(timeline.keyframes)[-3:] == [149, 159, 169]  # clicked: every 10 again
    store.append("s", timeline.drain())
    answers: dict[int, bytes] = {}
    wanted = range(0, 176, 7)
    one_by_one, _ = stored(setup("moons"))
    for n in range(176):
        if n in wanted:
            answers[n] = answer(one_by_one)
        one_by_one.next()
    for n in random.Random(2).sample(sorted(answers), len(answers)):
        timeline.rewind(n)
        assert answer(timeline) == answers[n], n
