// Compare mode (the lesson's figure F4): the correct loop beside a chosen bug, two live
// sessions from the same start and the same batches (same scenario, seed and lr), driven by
// one Next line and one Run, with both losses on one chart and both weight trajectories on
// another. `/?compare=skip_zero_grad&scenario=neuron&lr=0.05` opens it; the URL keeps it.
// The two programs are lined up like a diff and driven in lockstep (lockstep.js): one Next
// line runs one row of both, a line only one loop has is a skipped slot on the other side,
// and both loops always stand at the same iteration and row.
// A preset that needs a setup (a scheduler, Adam, moons with dropout, float16 autocast) gets
// it on both sides; what is the bug itself (softmax before the loss, float16 without a
// GradScaler) goes on the bug's side only.

import { api, ApiError } from "./api.js";
import { presets as catalogued } from "./catalogue.js";
import { lineUp, planNext, planRun, view } from "./lockstep.js";
import { presetProgram, readUrl, sameList, setupParams } from "./state.js";
import { createChart, legend } from "./views/chart.js";
import { createAnnouncer, createLive, describe } from "./views/controls.js";
import { createPane } from "./views/pane.js";
import { measured } from "./views/parabola.js";

const $ = (id) => document.getElementById(id);
const KEY = "loop-stepper.compare";
const SIDES = ["correct", "bug"];
// the least-squares weight of the four points, where the correct loop settles (lesson F4)
const SETTLES = { neuron: ["least squares w = 1.4", 1.4] };
// the optimizers compare mode offers; the URL uses the stepper's parameters for them
const OPTIMIZERS = {
  sgd: null, // the server's default: plain SGD
  momentum: { kind: "sgd", momentum: 0.9, weight_decay: 0 },
  weight_decay: { kind: "sgd", momentum: 0, weight_decay: 0.1 },
  adam: { kind: "adam", betas: [0.9, 0.999], weight_decay: 0 },
};

// the setup keys that are the bug itself, not what it needs
const OWN = ["softmax_before_loss", "grad_scaler"];

/** A preset's setup: what both sides need (shared) and what only the bug's side has (own). */
function setups(preset) {
  const shared = {}, own = {};
  for (const [k, v] of Object.entries(preset?.setup ?? {})) (OWN.includes(k) ? own : shared)[k] = v;
  if (shared.amp && shared.scenario === "moons") shared.dtype = "float32"; // autocast: float32
  return { shared, own };
}

/** A preset's loop as a session with this setup runs it: a GradScaler's ends with
 * scaler.update() (the server's scaled_program). */
const looped = (preset, setup) =>
  presetProgram(preset, setup.amp === "float16" && setup.grad_scaler !== false);

/** Whether a session was made with what `setup` asks for. */
function fits(s, setup) {
  const m = s.model_options;
  return (!setup.scenario || s.scenario === setup.scenario) &&
    (!setup.optimizer || s.optimizer.kind === setup.optimizer.kind) &&
    Boolean(setup.scheduler) === Boolean(s.scheduler) &&
    (setup.amp ?? null) === (s.amp?.dtype ?? null) &&
    (setup.amp !== "float16" || (setup.grad_scaler !== false) === s.amp.scaler) &&
    (setup.dropout ?? 0) === m.dropout && (setup.batchnorm ?? false) === m.batchnorm &&
    (setup.softmax_before_loss ?? false) === m.softmax_before_loss;
}

/** Which of OPTIMIZERS a session's (or the URL's) optimizer is; "sgd" for plain SGD. */
function optimizerName(o) {
  if (!o || (o.kind === "sgd" && !o.momentum && !o.weight_decay)) return "sgd";
  const same = (a, b) => a.kind === b.kind && (a.momentum ?? 0) === (b.momentum ?? 0) &&
    a.weight_decay === b.weight_decay && String(a.betas ?? "") === String(b.betas ?? "");
  return Object.keys(OPTIMIZERS).find((k) => OPTIMIZERS[k] && same(o, OPTIMIZERS[k])) ?? null;
}

// the stepper's markup goes (its ids and labels would clash); compare mode's takes its place
document.querySelector("main.layout").replaceWith($("compare-template").content.cloneNode(true));
$("controls").remove();
const announce = createAnnouncer($("announcer"));
const els = {
  next: $("c-next"), run: $("c-run"), reset: $("c-reset"), iterations: $("c-iterations"),
  bug: $("c-bug"), scenario: $("c-scenario"), lr: $("c-lr"), form: $("compare-controls"),
  optimizer: $("c-optimizer"),
};
// disabled, saying "Loading…", until both sessions exist (compare-template serves it so)
const live = createLive($("c-live"), $("c-status"), [els.form]);
const sessions = { correct: null, bug: null };
let presets = [];
let bug = null;
let optimizer = "sgd"; // a key of OPTIMIZERS
let renders = 0;
let queue = Promise.resolve();
// a line raised in a Next or Run: that loop stopped there, as the script would, so the pair
// is out of step until Reset or a new pair (lineUp says so)
let apart = false;

const panes = Object.fromEntries(SIDES.map((side) => [side, createPane(
  document.querySelector(`[data-pane="${side}"]`),
  (entry, index) => act({ [side]: (id) => api.line(id, entry) }, index),
)]));
const lossChart = createChart($("c-losses"));
const weightChart = createChart($("c-weights"));
for (const id of ["c-losses", "c-weights"]) {
  $(id).append(legend([{ cls: "correct", text: "correct loop" }, { cls: "bug", text: "with the bug" }]));
}

function render(fresh = false) {
  const a = sessions.correct, b = sessions.bug;
  const pair = lineUp(sessions, apart);
  const correctNote = presets.find((p) => p.name === "correct")?.explanation ?? "";
  panes.correct.render(a, fresh, "The correct loop", correctNote, view(pair, sessions, "correct"));
  panes.bug.render(b, fresh, `With the bug: ${bug.title}`, bug.explanation, view(pair, sessions, "bug"));
  document.body.dataset.lockstep = pair.at === null ? "apart" : String(pair.at);
  document.querySelector('[data-pane="bug"]').setAttribute("aria-label", `Loop with the bug: ${bug.title}`);
  const dtype = a.params[0]?.dtype ?? "float64";
  const losses = (s) => s.history.map((p) => [p.iteration, p.loss]);
  lossChart({
    series: [{ cls: "correct", points: losses(a), dots: true }, { cls: "bug", points: losses(b), dots: true }],
    include: [0],
    floor: 0,
    aria: `Loss of both loops over ${a.history.length} iterations`,
  });
  // x is the iteration whose loss line saw this weight; the latest step is one further
  const path = (s) => measured(s).map(([t, v]) => [t + 1, v]);
  const first = a.params[0];
  const index = first.shape.length ? `[${first.shape.map(() => 0).join(", ")}]` : "";
  $("c-weight-name").textContent = `${first.name}${index}`;
  const [label, y] = a.theory ? ["θ*", a.theory.theta_star] : SETTLES[a.scenario] ?? [];
  weightChart({
    series: [{ cls: "correct", points: path(a), dots: true }, { cls: "bug", points: path(b), dots: true }],
    marks: y === undefined ? [] : [{ y, cls: "star", label: label === "θ*" ? `θ* = ${y}` : label }],
    aria: `${first.name}${index} in both loops, dtype ${dtype}`,
  });
  els.scenario.value = a.scenario;
  if (document.activeElement !== els.lr) els.lr.value = String(a.lr);
  els.bug.value = bug.name;
  els.optimizer.value = optimizer;
  const q = new URLSearchParams({ compare: bug.name, scenario: a.scenario, lr: String(a.lr) });
  const spec = OPTIMIZERS[optimizer];
  if (spec) {
    q.set("optimizer", spec.kind);
    if (spec.kind === "sgd") q.set("momentum", String(spec.momentum));
    q.set("weight_decay", String(spec.weight_decay));
  }
  history.replaceState(null, "", `${location.pathname}?${q}`);
  $("c-back").href = `./?${backTo(b, q)}`;
  sessionStorage.setItem(KEY, JSON.stringify({ correct: a.id, bug: b.id }));
  document.body.dataset.renders = String(++renders);
}

/** The stepper's URL for the bug's side: its scenario, lr, optimizer, setup and preset. */
function backTo(b, shown) {
  const q = new URLSearchParams(shown);
  q.delete("compare");
  q.set("preset", bug.name);
  setupParams(b, q);
  return q;
}

function enqueue(job) {
  const run = queue.then(job).catch(async (error) => {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 404) {
      await makePair(sessions.correct?.scenario, sessions.correct?.lr); // expired: start again
      render(true);
      announce("The sessions had expired, so new ones were started.");
    } else {
      announce(error.message);
    }
  });
  queue = run.catch(() => {});
  return run;
}

const NAME = { correct: "Correct loop", bug: "With the bug" };

/**
 * Send each side its request at once. `plan` maps a side to `request(id)`, or to words for a
 * side where nothing runs (a skipped slot); a function giving that map is called when the
 * job's turn comes, so a lockstep plan is made from the sessions as they are by then. A side
 * that fails with 409 is fetched again (a `run` stopped there keeps the lines before it) and
 * shows PyTorch's message at its line; in a Next or Run (`step`) that loop has stopped there,
 * as the script would, so the pair is out of step from then on.
 */
function act(plan, clicked, step = false) {
  return enqueue(async () => {
    const requests = typeof plan === "function" ? plan() : plan;
    const list = SIDES.filter((side) => side in requests);
    const running = list.filter((side) => typeof requests[side] === "function");
    const answers = await Promise.allSettled(running.map((side) => requests[side](sessions[side].id)));
    const problems = {};
    for (const [i, side] of running.entries()) {
      const answer = answers[i];
      if (answer.status === "fulfilled") {
        sessions[side] = answer.value;
      } else if (answer.reason instanceof ApiError && answer.reason.status === 409) {
        problems[side] = answer.reason;
        sessions[side] = await api.get(sessions[side].id);
        if (step) apart = true;
      } else {
        throw answer.reason;
      }
    }
    render();
    for (const side of list) panes[side].problem(problems[side] ?? null, clicked);
    announce(list.map((side) => {
      if (problems[side]) return `${NAME[side]}: ${problems[side].line} failed: ${problems[side].message}`;
      if (!running.includes(side)) return `${NAME[side]}: ${requests[side]}`;
      return `${NAME[side]}: ${describe(sessions[side])}`;
    }).join(" "));
  });
}

const both = (request) => Object.fromEntries(SIDES.map((side) => [side, request]));

/** One Next line: the row both loops stand at, on each side that has a line there. */
function nextPlan() {
  const pair = lineUp(sessions, apart);
  const plan = planNext(pair);
  const entry = pair.at === null ? null : pair.rows[pair.at].entry;
  return Object.fromEntries(SIDES.map((side) => [side, plan[side]
    ? (id) => api.next(id)
    : `${entry} skipped: this loop has no such line, nothing runs here.`]));
}

/** Run `n`: whole iterations of both; they end together at row 0. */
function runPlan(n) {
  const plan = planRun(lineUp(sessions, apart), n);
  return Object.fromEntries(SIDES.map((side) => [side, plan[side]
    ? (id) => api.run(id, plan[side])
    : "this iteration was already done; nothing more to run."]));
}

/** Two new sessions with one seed, lr and optimizer (and the setup the bug needs); the second
 * gets the bug's program. */
async function makePair(scenario = "neuron", lr) {
  const old = SIDES.map((side) => sessions[side]?.id).filter(Boolean);
  const spec = OPTIMIZERS[optimizer];
  const { shared, own } = setups(bug);
  if (shared.scenario && shared.scenario !== scenario) lr = undefined; // that scenario's own
  const common = { scenario, ...(spec ? { optimizer: spec } : {}), ...shared };
  const a = await api.create({ ...common, ...(lr ? { lr } : {}) });
  const theirs = { ...common, ...own };
  sessions.bug = await api.create({
    ...theirs, lr: a.lr, seed: a.seed, program: looped(bug, theirs),
  });
  sessions.correct = a;
  apart = false; // two new loops at row 0
  optimizer = optimizerName(a.optimizer) ?? optimizer; // a preset may need Adam
  for (const id of old) api.remove(id).catch(() => {});
}

/** The pair this tab had, if both still exist and match what the URL asks for. */
async function storedPair(setup) {
  try {
    const ids = JSON.parse(sessionStorage.getItem(KEY) ?? "null");
    if (!ids) return false;
    const [a, b] = await Promise.all([api.get(ids.correct), api.get(ids.bug)]);
    const { shared, own } = setups(bug);
    const theirs = { ...shared, ...own };
    const ok = a.preset === "correct" && sameList(b.program, looped(bug, theirs)) &&
      fits(a, shared) && fits(b, theirs) && a.seed === b.seed &&
      optimizerName(a.optimizer) === optimizer && optimizerName(b.optimizer) === optimizer &&
      a.scenario === (setup.scenario ?? "neuron") && b.scenario === a.scenario && a.lr === b.lr &&
      (setup.lr === undefined || setup.lr === a.lr);
    if (ok) Object.assign(sessions, { correct: a, bug: b });
    return ok;
  } catch {
    return false;
  }
}

els.form.addEventListener("submit", (e) => e.preventDefault());
// one row of both loops: the line each side has there, nothing on a slot
els.next.addEventListener("click", () => act(nextPlan, undefined, true));
els.run.addEventListener("click", () => {
  const n = Number(els.iterations.value);
  const ok = Number.isInteger(n) && n >= 1 && n <= 1000;
  els.iterations.setAttribute("aria-invalid", String(!ok));
  // whole iterations of both: they end together at row 0
  if (ok) act(() => runPlan(n), undefined, true);
});
els.reset.addEventListener("click", () => {
  act(() => {
    apart = false; // both start again: in step
    return both((id) => api.reset(id));
  });
});
els.lr.addEventListener("change", () => {
  const lr = Number(els.lr.value);
  if (Number.isFinite(lr) && lr > 0 && lr <= 100) act(both((id) => api.patch(id, { lr })));
});
els.bug.addEventListener("change", () => {
  bug = presets.find((p) => p.name === els.bug.value);
  // both start again together (new sessions: the bug may need another setup), so the
  // comparison stays fair
  enqueue(async () => {
    await makePair(sessions.correct.scenario, sessions.correct.lr);
    render(true);
    announce(`Comparing with: ${bug.title}. Both loops start again.`);
  });
});
els.optimizer.addEventListener("change", () =>
  enqueue(async () => {
    optimizer = els.optimizer.value;
    await makePair(sessions.correct.scenario, sessions.correct.lr);
    render(true);
    announce(`Both loops start again with ${els.optimizer.selectedOptions[0].text}.`);
  }));
els.scenario.addEventListener("change", () =>
  enqueue(async () => {
    await makePair(els.scenario.value);
    render(true);
  }));
document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.target.closest?.("input, select, textarea")) return;
  if (live.loading) {
    // nothing to run yet: say so rather than drop the key
    if (["n", "ArrowRight", "r"].includes(e.key)) {
      e.preventDefault();
      live.notYet();
    }
    return;
  }
  if (e.key === "n" || e.key === "ArrowRight") {
    e.preventDefault();
    els.next.click();
  } else if (e.key === "r") {
    e.preventDefault();
    els.reset.click();
  }
});

async function start() {
  const url = readUrl();
  try {
    presets = catalogued();
    const bugs = presets.filter((p) => p.name !== "correct");
    bug = bugs.find((p) => p.name === url.compare) ?? bugs[0];
    optimizer = optimizerName(url.setup.optimizer) ?? "sgd";
    els.bug.replaceChildren(...bugs.map((p) => new Option(p.title, p.name)));
    if (!(await storedPair(url.setup))) await makePair(url.setup.scenario, url.setup.lr);
    render(true);
    live.ready();
    announce(`Comparing the correct loop with: ${bug.title}.`);
  } catch (error) {
    live.failed(error.message); // the server or the network: the controls stay off, in words
    if (!(error instanceof ApiError)) throw error;
  }
  document.body.dataset.ready = "1";
}

start();
