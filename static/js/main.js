// Wiring: one Session object in, every view repainted from it. Actions are queued so two
// quick clicks never race (the server would serialize them anyway, but the page must show
// the answers in the order it asked).

import { api, ApiError } from "./api.js";
import { openSession, readUrl, storeId, writeUrl } from "./state.js";
import { createCode, showProblem } from "./views/code.js";
import { createAnnouncer, createControls, describe } from "./views/controls.js";
import { createGraph } from "./views/graph.js";
import { createGrads } from "./views/grads.js";
import { createLoss } from "./views/loss.js";
import { createOutput } from "./views/output.js";
import { createParams } from "./views/params.js";

const $ = (id) => document.getElementById(id);
const IO_WORDS = { read: "read", write: "written", "read write": "read + written" };

let session = null;
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
const views = {
  code: createCode($("code"), (entry, index) =>
    perform(() => api.line(session.id, entry), true, undefined, false, index)),
  params: createParams($("params")),
  grads: createGrads($("grads")),
  graph: createGraph($("graph")),
  loss: createLoss($("loss"), (s) => s.params[0]?.dtype ?? "float64"),
};
const output = createOutput($("output"));
const controls = createControls({
  next: () => perform(() => api.next(session.id), true),
  toggleRun: () => (running ? pause() : play()),
  reset: () => {
    pause();
    perform(() => api.reset(session.id), true, "Reset: initial parameters, iteration 0.");
  },
  scenario: (name) => {
    pause();
    const toggles = session.toggles;
    const old = session.id;
    perform(async () => {
      const fresh = await api.create({ scenario: name, ...toggles });
      storeId(fresh.id);
      api.remove(old).catch(() => {}); // free the server's memory; an expired one is fine
      return fresh;
    }, true, `New ${name} session.`, true);
  },
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
  codePanel = views.code(session, clicked !== undefined);
  views.params(session, previous);
  views.grads(session, previous);
  views.graph(session);
  views.loss(session);
  const lossEl = $("loss-value");
  lossEl?.classList.toggle("changed", Boolean(previous && previous.loss !== session.loss));
  highlight(session);
  controls.render(session);
  $("iteration").textContent = `iteration ${session.iteration}, next: ${session.next_line}`;
  writeUrl(session, present);
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
  refreshOutput();
}

/**
 * Queue one request; render its Session; show a refusal (409) in PyTorch's words next to
 * its line. Resolves to true when the line ran, so Run knows when to stop.
 */
function perform(request, speak, sentence, fresh = false, clicked = undefined) {
  const job = queue.then(async () => {
    try {
      const next = await request();
      render(next, fresh, clicked);
      showProblem($("problem"), codePanel, null);
      if (speak && !running) announce(sentence ?? describe(next));
      return true;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.status === 404) {
        // the session expired (idle timeout or a server restart): start a fresh one
        const fresh = await api.create({ scenario: session.scenario, lr: session.lr, ...session.toggles });
        storeId(fresh.id);
        render(fresh, true);
        error.message = "Your session had expired, so a new one was started.";
        error.line = null;
      }
      pause();
      showProblem($("problem"), codePanel, error, clicked);
      announce(`${error.line ? `${error.line} failed: ` : ""}${error.message}`);
      return false;
    }
  });
  queue = job.catch(() => false);
  return job;
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
    const ok = await perform(() => (whole ? api.run(session.id, 1) : api.next(session.id)), false);
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

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || !session || typing(e.target)) return;
  if (e.key === "n" || e.key === "ArrowRight") {
    e.preventDefault();
    perform(() => api.next(session.id), true);
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
    render(await openSession(api, url.setup), true);
    announce(describe(session));
  } catch (error) {
    showProblem($("problem"), codePanel, error);
  }
  document.body.dataset.ready = "1";
}

start();
