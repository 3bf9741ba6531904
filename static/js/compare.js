// Compare mode (the lesson's figure F4): the correct loop beside a chosen bug, driven by one
// Next line and one Run. `/?compare=skip_zero_grad&scenario=neuron&lr=0.05` opens it; the URL
// keeps it. This file wires the controls to the pair: what each click asks of each side
// (lockstep.js: one Next line runs one row of both, a line only one loop has is a skipped
// slot on the other side), through the page's one queue (queue.js). The pair's lifecycle is
// pair.js, its picture views/comparison.js.

import { api, ApiError } from "./api.js";
import { presets as catalogued } from "./catalogue.js";
import { lineUp, planNext, planRun } from "./lockstep.js";
import { createPair, OPTIMIZERS, optimizerName, SIDES } from "./pair.js";
import { createQueue } from "./queue.js";
import { readUrl } from "./state.js";
import { createComparison } from "./views/comparison.js";
import { createAnnouncer, createLive, describe } from "./views/controls.js";

const $ = (id) => document.getElementById(id);

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
const pair = createPair(api);
const { sessions } = pair;
const presets = catalogued();
const { panes, render } = createComparison({
  pair, els, optimizers: OPTIMIZERS,
  correctNote: presets.find((p) => p.name === "correct")?.explanation ?? "",
  onLine: (side, entry, index) => act({ [side]: (id) => api.line(id, entry) }, index),
});
const queue = createQueue();

/** Queue `job`; a session that expired (404) starts a new pair, any other refusal is said.
 * The recovery runs in the job's turn, so nothing queued after it sees a half-made pair. */
function enqueue(job) {
  return queue(async () => {
    try {
      return await job();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.status === 404) {
        await pair.make(sessions.correct?.scenario, sessions.correct?.lr); // expired: start again
        render(true);
        announce("The sessions had expired, so new ones were started.");
      } else {
        announce(error.message);
      }
      return undefined;
    }
  });
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
        if (step) pair.apart = true;
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
  const lined = lineUp(sessions, pair.apart);
  const plan = planNext(lined);
  const entry = lined.at === null ? null : lined.rows[lined.at].entry;
  return Object.fromEntries(SIDES.map((side) => [side, plan[side]
    ? (id) => api.next(id)
    : `${entry} skipped: this loop has no such line, nothing runs here.`]));
}

/** Run `n`: whole iterations of both; they end together at row 0. */
function runPlan(n) {
  const plan = planRun(lineUp(sessions, pair.apart), n);
  return Object.fromEntries(SIDES.map((side) => [side, plan[side]
    ? (id) => api.run(id, plan[side])
    : "this iteration was already done; nothing more to run."]));
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
    pair.apart = false; // both start again: in step
    return both((id) => api.reset(id));
  });
});
els.lr.addEventListener("change", () => {
  const lr = Number(els.lr.value);
  if (Number.isFinite(lr) && lr > 0 && lr <= 100) act(both((id) => api.patch(id, { lr })));
});
els.bug.addEventListener("change", () => {
  pair.bug = presets.find((p) => p.name === els.bug.value);
  // both start again together (new sessions: the bug may need another setup), so the
  // comparison stays fair
  enqueue(async () => {
    await pair.make(sessions.correct.scenario, sessions.correct.lr);
    render(true);
    announce(`Comparing with: ${pair.bug.title}. Both loops start again.`);
  });
});
els.optimizer.addEventListener("change", () =>
  enqueue(async () => {
    pair.optimizer = els.optimizer.value;
    await pair.make(sessions.correct.scenario, sessions.correct.lr);
    render(true);
    announce(`Both loops start again with ${els.optimizer.selectedOptions[0].text}.`);
  }));
els.scenario.addEventListener("change", () =>
  enqueue(async () => {
    await pair.make(els.scenario.value);
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
    const bugs = presets.filter((p) => p.name !== "correct");
    pair.bug = bugs.find((p) => p.name === url.compare) ?? bugs[0];
    pair.optimizer = optimizerName(url.setup.optimizer) ?? "sgd";
    els.bug.replaceChildren(...bugs.map((p) => new Option(p.title, p.name)));
    if (!(await pair.restore(url.setup))) await pair.make(url.setup.scenario, url.setup.lr);
    render(true);
    live.ready();
    announce(`Comparing the correct loop with: ${pair.bug.title}.`);
  } catch (error) {
    live.failed(error.message); // the server or the network: the controls stay off, in words
    if (!(error instanceof ApiError)) throw error;
  }
  document.body.dataset.ready = "1";
}

start();
