"""A session's setup and the ``POST /api/sessions`` body that says it, both ways: the body a
create, an LTI launch or a lesson sends made into a Setup (``setup_of``, ``spec_setup``,
``lesson_setup``), and a Setup said again as the body that makes it (``body_of``: a draft
lesson's setup, issue 29)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from app.engine import Toggles, scenarios
from app.engine.amp import AmpSpec
from app.engine.lessons import walk_of
from app.engine.optimizers import PLAIN_SGD, OptimizerSpec, SchedulerSpec
from app.engine.program import program_for
from app.log.records import Setup
from app.sessions import specs
from app.sessions.specs import DatasetSource
from app.settings import Settings
from app.spec.spec import SPEC_LR, SpecLimits
from app.web.flights import Flights
from app.web.schemas import CreateSession


def optimizer_spec(body: CreateSession) -> OptimizerSpec:
    opt = body.optimizer
    if opt is None:
        return PLAIN_SGD
    if opt.kind == "adam":
        return OptimizerSpec(
            "adam", weight_decay=opt.weight_decay, betas=(opt.betas[0], opt.betas[1])
        )
    return OptimizerSpec("sgd", momentum=opt.momentum, weight_decay=opt.weight_decay)


def scenario_options(body: CreateSession) -> dict[str, float]:
    options = {"curvature": body.curvature, "theta_star": body.theta_star}
    return {k: v for k, v in options.items() if v is not None}


def setup_of(body: CreateSession, program: tuple[str, ...] | list[str] | None = None) -> Setup:
    """The setup a ``POST /api/sessions`` body (not a snapshot's) creates; ``program``, when
    given, in place of the body's (self-study's hidden one). An LTI launch's ``setup`` too."""
    info = scenarios.info(body.scenario)
    toggles = Toggles(body.skip_zero_grad, body.step_first)
    scaler = body.amp == "float16" and body.grad_scaler is not False
    default = program_for(toggles, body.accumulate, scaler)
    program = program or body.program or default
    return Setup(
        body.scenario,
        info.default_lr if body.lr is None else body.lr,
        info.default_seed if body.seed is None else body.seed,
        optimizer_spec(body),
        body.accumulate,
        scenario_options(body),
        tuple(program),
        body.max_norm,
        None if body.scheduler is None else SchedulerSpec.read(body.scheduler.model_dump()),
        body.dropout,
        body.batchnorm,
        body.softmax_before_loss,
        body.dtype,
        None if body.amp is None else AmpSpec(body.amp, body.grad_scaler is not False),
    )


def spec_setup(body: CreateSession, settings: Settings, db: DatasetSource) -> Setup:
    """The Setup of a create with a model: the spec checked whole and built dry first."""
    seed = 0 if body.seed is None else body.seed
    spec, _ = specs.prepare(db, body.spec(), seed, spec_limits(settings))
    toggles = Toggles(body.skip_zero_grad, body.step_first)
    scaler = body.amp == "float16" and body.grad_scaler is not False
    return Setup(
        "custom",
        SPEC_LR if body.lr is None else body.lr,
        seed,
        optimizer_spec(body),
        body.accumulate,
        {},
        tuple(body.program or program_for(toggles, body.accumulate, scaler)),
        body.max_norm,
        None if body.scheduler is None else SchedulerSpec.read(body.scheduler.model_dump()),
        dtype=body.spec_dtype,
        amp=None if body.amp is None else AmpSpec(body.amp, body.grad_scaler is not False),
        spec=specs.as_setup_spec(spec),
    )


def spec_limits(settings: Settings) -> SpecLimits:
    """A spec's bounds, from the settings (``LOOP_STEPPER_SPEC_MAX_*``)."""
    return SpecLimits(
        settings.spec_max_params,
        settings.spec_max_layers,
        settings.spec_max_rows,
        settings.spec_max_features,
        settings.spec_max_batch,
    )


def lesson_setup(
    lesson_id: str, doc: dict[str, Any], settings: Settings, db: DatasetSource
) -> Setup:
    """A session's setup on a lesson: the lesson's setup (a scenario's or a spec's), with its
    walk (the stops it carries to every view)."""
    body = CreateSession.model_validate(doc["setup"])
    if body.model is not None:
        setup = spec_setup(body, settings, db)
    else:
        setup = setup_of(body, doc.get("program") or None)
    return Setup.from_json({**setup.to_json(), "lesson": walk_of(lesson_id, doc)})


def body_of(setup: Setup) -> dict[str, Any]:
    """The ``POST /api/sessions`` body that creates ``setup`` (a lesson's walk aside):
    ``setup_of`` (or ``spec_setup``) of it gives ``setup`` back. The program is always said
    whole, so no toggle is needed."""
    body: dict[str, Any]
    if setup.spec is not None:  # the normalized spec: every field filled in
        body = {**setup.spec, "dtype": setup.dtype}
    else:
        body = {"scenario": setup.scenario, **setup.options}
        if setup.scenario == "moons":
            body |= {
                "dropout": setup.dropout,
                "batchnorm": setup.batchnorm,
                "softmax_before_loss": setup.softmax_before_loss,
                "dtype": setup.dtype,
            }
    body |= {
        "lr": setup.lr,
        "seed": setup.seed,
        "accumulate": setup.accumulate,
        "program": list(setup.program),
        "max_norm": setup.max_norm,
    }
    o = setup.optimizer
    if o != PLAIN_SGD:
        body["optimizer"] = (
            {"kind": "adam", "betas": list(o.betas), "weight_decay": o.weight_decay}
            if o.kind == "adam"
            else {"kind": "sgd", "momentum": o.momentum, "weight_decay": o.weight_decay}
        )
    if setup.scheduler is not None:
        said = setup.scheduler.describe()
        body["scheduler"] = {k: v for k, v in said.items() if v is not None}
    if setup.amp is not None:
        body["amp"] = setup.amp.dtype
        if setup.amp.dtype == "float16":
            body["grad_scaler"] = setup.amp.scaler
    return body


class Checked:
    """The Setups of bodies with a model of one's own, checked once each (the newest ``kept``):
    a class creating one model at once has its body checked and run dry once, not by each of
    300 creations (they wait for the first). On the event loop only. A dataset is named by the
    hash of its bytes, so a body names the same data every time."""

    def __init__(self, kept: int = 32) -> None:
        self.kept = kept
        self._setups: OrderedDict[str, Setup] = OrderedDict()
        self._flights = Flights()

    async def setup(self, body: CreateSession, check: Callable[[], Awaitable[Setup]]) -> Setup:
        """The body's Setup: kept, or ``check()``ed once (a failed check is each one's own)."""
        key = body.model_dump_json()
        await self._flights.after(key)
        setup = self._setups.get(key)
        if setup is None:
            async with self._flights.flight(key):
                setup = self._setups[key] = await check()
            while len(self._setups) > self.kept:
                self._setups.popitem(last=False)
        return setup


CHECKED = Checked()
