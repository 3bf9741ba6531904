// The stepper: one Session object in, every view repainted from it. Actions are queued so two
// quick clicks never race (the server would serialize them anyway, but the page must show
// the answers in the order it asked).

import { api, ApiError } from "./api.js";
import {
  openSession, presetProgram, readUrl, scaled, setupOf, storeId, writeUrl,
} from "./state.js";
import { createCode, showProblem } from "./views/code.js";
import { createAnnouncer, createControls, describe } from "./views/controls.js";
import { createEditor } from "./views/editor.js";
import { createAmp } from "./views/amp.js";
import { createExtras } from "./views/extras.js";
import { createGraph } from "./views/graph.js";
import { createGrads } from "./views/grads.js";
import { createLoss } from "./views/loss.js";
import { createOptState } from "./views/optstate.js";
import { createOutput } from "./views/output.js";
import { createParabola } from "./views/parabola.js";
import { createParams } from "./views/params.js";
import { createSetup } from "./views/setup.js";
import { createShare } from "./views/share.js";
import { createTimeline } from "./views/timeline.js";

const $ = (id) => document.getElementById(id);
const IO_WORDS = { read: "read", write: "written", "read write": "read + written" };

let session = null;
let scenarios = null; // GET /api/scenarios: the accumulate options per scenario
let running = false;
let present = false;
let queue = Promise.resolve();
const stats = { renders: 0, lastRenderMs: 0, renderMs: [], clickToPaintMs: [] };
// Benchmark hook: from a click (or key) on the page to the frame after the repaint it caused.
let inputAt = null;
for (const type of ["click", "keydown"]) {
  document.addEventListener(type, (e) => (inputAt = e.timeStamp), { capture: true });
}
window.loopStepper = { stats, get session() { return session; } };

const announce = createAnnouncer($("announcer"));
let codePanel = null;
const editor = createEditor((rewrite) =>
  perform(() => api.patch(session.id, { program: rewrite([...session.program]) }), true, "Program changed."));
const views = {
  code: createCode($("code"), (entry, index) =>
    perform(() => api.line(session.id, entry), true, undefined, false, index), editor.decorate),
  params: createParams($("params")),
  grads: createGrads($("grads")),
  graph: createGraph($("graph")),
  loss: createLoss($("loss"), (s) => s.params[0]?.dtype ?? "float64"),
  optstate: createOptState(document.querySelector("[data-store=optimizer_state]"), $("optstate")),
  extras: createExtras($("extras"), $("extras-body")),
  amp: createAmp($("amp-panel"), $("amp-body")),
};
const output = createOutput($("output"));
const parabola = createParabola($("theta"));
// answers from rewind and back: the moments stay as they were, so the slider keeps its list
const travelled = new WeakSet();
const travel = async (request) => {
  const s = await request;
  travelled.add(s);
  return s;
};
const timeline = createTimeline({
  back: () => goBack(),
  rewind: (to) => {
    pause();
    // no announcement per position: the slider's own value text says where it is
    return perform(() => travel(api.rewind(session.id, to)), false);
  },
  list: (id) => api.timeline(id),
});
const share = createShare({
  snapshot: () => enqueue(async () => {
    try {
      const taken = await api.snapshot(session.id);
      return { ...taken, moment: session.moment, at: `${session.id}@${session.moment}` };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      await recover(error);
      complain(error);
      return null;
    }
  }),
  announce: (text) => announce(text),
}, api.scriptUrl);

function goBack() {
  if (!timeline.canGoBack()) return;
  pause();
  perform(() => travel(api.back(session.id)), true,
    (s) => `Back to ${timeline.label(s.moment)}. ${describe(s)}`);
}

/** A new session (the setup changed): same loop where it still fits, the old one freed. */
function newSession(setup, sentence) {
  pause();
  const old = session;
  perform(async () => {
    // the same loop where it still fits (the same accumulation), else the toggles' loop
    const { skip_zero_grad, step_first, ...rest } = setup;
    // (and the same GradScaler or none: its loop ends with scaler.update())
    const scaler = setup.amp === "float16" && setup.grad_scaler !== false;
    const keep = (setup.accumulate ?? 1) === old.accumulate && scaler === scaled(old);
    const fresh = await api.create(keep ? { ...rest, program: old.program } : setup);
    storeId(fresh.id);
    api.remove(old.id).catch(() => {}); // free the server's memory; an expired one is fine
    return fresh;
  }, true, sentence, true);
}
const setup = createSetup((changes) =>
  newSession({ ...setupOf(session), lr: session.lr, ...changes }, "New session with the new setup."));
const controls = createControls({
  next: () => perform(() => api.next(session.id), true),
  toggleRun: () => (running ? pause() : play()),
  reset: () => {
    pause();
    perform(() => api.reset(session.id), true, "Reset: initial parameters, iteration 0.");
  },
  scenario: (name) => {
    // the new scenario's default lr; accumulation only if it divides the new batch
    const { curvature, theta_star, dropout, batchnorm, softmax_before_loss, dtype, ...carried } =
      setupOf(session);
    if (name === "moons") Object.assign(carried, { dropout, batchnorm, softmax_before_loss, dtype });
    if (name === "moons" && carried.amp) carried.dtype = "float32"; // autocast: float32 models
    if (name === "parabola") { // float64: autocast does not apply
      delete carried.amp;
      delete carried.grad_scaler;
    }
    const ks = scenarios?.find((s) => s.name === name)?.accumulate ?? [1];
    if (!ks.includes(carried.accumulate)) carried.accumulate = 1;
    newSession({ ...carried, scenario: name }, `New ${name} session.`);
  },
  runIterations: (n) => perform(() => api.run(session.id, n), true, undefined, false, undefined, true),
  patch: (changes) => perform(() => api.patch(session.id, changes), true, "Setup changed."),
  togglePresent: () => setPresent(!present),
});

/** Mark the stores the line just run read and wrote (the lesson's F2 table). */
function highlight(s) {
  const reads = new Set(s.last?.reads ?? []);
  const writes = new Set(s.last?.writes ?? []);
  for (const section of document.querySelectorAll("[data-store]")) {
    const store = section.dataset.store;
    const io = [reads.has(store) ? "read" : "", writes.has(store) ? "write" : ""]
      .filter(Boolean).join(" ");
    section.dataset.io = io;
    const badge = section.querySelector(".io");
    const what = store === "data" ? "the batch " : "";
    if (badge) badge.textContent = io ? `${what}${IO_WORDS[io]} by ${s.last.line}` : "";
  }
}

let outputKey = "";
let outputBusy = false;
let outputAgain = false;
/** The output only changes when the parameters do: fetch it then, one request at a time. */
async function refreshOutput() {
  if (outputBusy) {
    outputAgain = true;
    return;
  }
  const key = `${session.id}:${JSON.stringify(session.params.map((p) => p.value))}`;
  if (key === outputKey) return;
  outputBusy = true;
  try {
    output(await api.output(session.id));
    outputKey = key;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error; // a 404 here is handled by the next line
  } finally {
    outputBusy = false;
  }
  if (outputAgain) {
    outputAgain = false;
    refreshOutput();
  }
}

function render(next, fresh = false, clicked = undefined) {
  const t0 = performance.now();
  const previous = fresh ? null : session;
  session = next;
  editor.render(session); // before the code view: its tools read the new program
  codePanel = views.code(session, clicked !== undefined);
  views.params(session, previous);
  views.grads(session, previous);
  views.graph(session);
  views.loss(session);
  views.optstate(session, previous);
  views.extras(session);
  views.amp(session);
  setup.render(session, scenarios);
  const lossEl = $("loss-value");
  lossEl?.classList.toggle("changed", Boolean(previous && previous.loss !== session.loss));
  highlight(session);
  controls.render(session);
  timeline.render(session, travelled.has(next));
  share.render(session);
  $("iteration").textContent = `iteration ${session.iteration}, next: ${session.next_line}`;
  writeUrl(session, present);
  const bug = session.preset && session.preset !== "correct" ? session.preset : "skip_zero_grad";
  $("compare-link").href = `./?compare=${bug}&scenario=${session.scenario}&lr=${session.lr}`;
  const ms = performance.now() - t0;
  stats.renders += 1;
  stats.lastRenderMs = ms;
  stats.renderMs.push(ms);
  if (stats.renderMs.length > 500) stats.renderMs.shift();
  document.body.dataset.renders = String(stats.renders);
  if (inputAt !== null) {
    const from = inputAt;
    inputAt = null;
    requestAnimationFrame(() => {
      stats.clickToPaintMs.push(performance.now() - from);
      if (stats.clickToPaintMs.length > 500) stats.clickToPaintMs.shift();
    });
  }
  const theta = session.scenario === "parabola";
  $("output").hidden = theta;
  $("theta").hidden = !theta;
  if (theta) parabola(session);
  else refreshOutput();
}

/** Run `task` after every action asked for before it, so answers are shown in order. */
function enqueue(task) {
  const job = queue.then(task);
  queue = job.catch(() => false);
  return job;
}

/**
 * Queue one request; render its Session; show a refusal (409) in PyTorch's words next to
 * its line. Resolves to true when the line ran, so Run knows when to stop. A `run` that
 * stops at a failing line has done the lines before it: `refetch` shows them, and the
 * message sits at the line where it stopped (the cursor). `sentence` may be a function of
 * the answer.
 */
function perform(request, speak, sentence, fresh = false, clicked = undefined, refetch = false) {
  return enqueue(async () => {
    try {
      const next = await request();
      render(next, fresh, clicked);
      showProblem($("problem"), codePanel, null);
      if (speak && !running) {
        announce(typeof sentence === "function" ? sentence(next) : sentence ?? describe(next));
      }
      return true;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      await recover(error, refetch);
      complain(error, clicked);
      return false;
    }
  });
}

/** The Session, or null when the server has no such session (a 404 on the session itself). */
async function sessionOrNull(id) {
  try {
    return await api.get(id);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/**
 * After a refusal: show what the server holds now. Sessions outlive restarts and idle
 * timeouts (they are read back from the store), so a 404 replaces the session only when
 * the session itself is gone; a server that does not answer (status 0) changes nothing.
 */
async function recover(error, refetch = false) {
  try {
    if (error.status === 404) {
      const kept = await sessionOrNull(session.id);
      if (kept) {
        render(kept);
      } else {
        const fresh = await api.create({ ...setupOf(session), lr: session.lr });
        storeId(fresh.id);
        render(fresh, true);
        error.message = "Your session had expired, so a new one was started.";
        error.line = null;
      }
    } else if (refetch && error.status === 409) {
      render(await api.get(session.id));
    }
  } catch (again) {
    if (!(again instanceof ApiError)) throw again;
    // e.g. the server went away meanwhile: say that, not the first refusal
    Object.assign(error, { status: again.status, line: null, heading: again.heading });
    error.message = again.message;
  }
}

/** Stop running, show the refusal beside its line and say it. */
function complain(error, clicked) {
  pause();
  showProblem($("problem"), codePanel, error, clicked);
  const head = error.line ? `${error.line} failed: ` : error.heading ? `${error.heading} ` : "";
  announce(`${head}${error.message}`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function play() {
  if (running) return;
  running = true;
  controls.running(true);
  announce("Running.");
  while (running) {
    const t0 = performance.now();
    const whole = controls.els.speed.value === "iter";
    const ok = await perform(() => (whole ? api.run(session.id, 1) : api.next(session.id)), false,
      undefined, false, undefined, whole);
    if (!ok) break;
    const interval = whole ? 100 : 1000 / Number(controls.els.speed.value);
    await sleep(Math.max(0, interval - (performance.now() - t0)));
  }
  pause();
}

function pause() {
  if (!running) return;
  running = false;
  controls.running(false);
  const loss = session.loss === null ? "None" : session.loss;
  announce(`Paused at iteration ${session.iteration}, loss ${typeof loss === "number" ? Number(loss.toPrecision(4)) : loss}.`);
}

function setPresent(on) {
  present = on;
  document.body.classList.toggle("present", on);
  controls.present(on);
  if (session) writeUrl(session, present);
}

function typing(target) {
  return target.closest?.("input:not([type=checkbox]), select, textarea, [contenteditable]");
}

const KEYS = ["n", "ArrowRight", " ", "r"];

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
  if (!session) {
    // before the session exists a key cannot run anything: say so rather than drop it
    if (KEYS.includes(e.key) && controls.loading) {
      e.preventDefault();
      controls.notYet();
    }
    return;
  }
  if (e.key === "n" || e.key === "ArrowRight") {
    e.preventDefault();
    perform(() => api.next(session.id), true);
  } else if (e.key === "b" || e.key === "ArrowLeft") {
    e.preventDefault();
    goBack();
  } else if (e.key === " " && !e.target.matches?.("input[type=checkbox]")) {
    // space is run/pause everywhere but a checkbox; Enter still presses a focused button
    e.preventDefault();
    if (running) pause();
    else play();
  } else if (e.key === "r") {
    e.preventDefault();
    controls.els.reset.click();
  }
});

async function start() {
  const url = readUrl();
  setPresent(url.present);
  try {
    const presets = await api.presets();
    scenarios = await api.scenarios();
    editor.setPresets(presets);
    const preset = presets.find((p) => p.name === url.preset);
    const scaler = url.setup.amp === "float16" && url.setup.grad_scaler !== false;
    const program = url.program ?? (preset ? presetProgram(preset, scaler) : null);
    // a link may ask for an accumulation the scenario's batch does not divide: ignore it
    const ks = scenarios.find((s) => s.name === (url.setup.scenario ?? "neuron"))?.accumulate;
    if (ks && !ks.includes(url.setup.accumulate ?? 1)) delete url.setup.accumulate;
    // a shared moment (/?snapshot=token) opens as this tab's own session; rendering it puts
    // the setup in the URL instead, so a reload keeps the copy rather than opening it again
    let opened = null;
    let notice = null;
    if (url.snapshot) {
      try {
        opened = await api.open(url.snapshot);
        storeId(opened.id);
      } catch (error) {
        if (!(error instanceof ApiError) || (error.status !== 404 && error.status !== 422)) throw error;
        notice = {
          heading: "This shared link does not open here:",
          message: "the server has no such moment (the link may be mistyped, or from another server). A new session was started instead.",
          line: null,
        };
      }
    }
    render(opened ?? (await openSession(api, url.setup, program)), true);
    controls.ready();
    $("edit").disabled = false;
    if (notice) {
      showProblem($("problem"), codePanel, notice);
      announce(`${notice.heading} ${notice.message}`);
    } else {
      announce(opened ? `Opened a shared moment: ${timeline.label(session.moment)}.` : describe(session));
    }
  } catch (error) {
    controls.failed(error.message);
    showProblem($("problem"), codePanel, error);
  }
  document.body.dataset.ready = "1";
}

start();
