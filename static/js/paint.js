// Painting: one Session in, every view repainted from it. Owns the page's current Session
// (`current.session`) and the render timings the benchmark reads (window.loopStepper).

import { api, ApiError } from "./api.js";
import { writeUrl } from "./state.js";
import { markStores } from "./views/marks.js";

const $ = (id) => document.getElementById(id);

/** What the page shows now: the Session, the scenarios' options, presenter mode. */
export const current = { session: null, scenarios: null, present: false, codePanel: null };
/** Answers from rewind and back: the moments stay as they were, so the slider keeps its list. */
export const travelled = new WeakSet();

const stats = { renders: 0, lastRenderMs: 0, renderMs: [], clickToPaintMs: [] };
// Benchmark hook: from a click (or key) on the page to the frame after the repaint it caused.
let inputAt = null;
for (const type of ["click", "keydown"]) {
  document.addEventListener(type, (e) => (inputAt = e.timeStamp), { capture: true });
}
window.loopStepper = { stats, get session() { return current.session; } };

/** The output only changes when the parameters do: fetch it then, one request at a time. */
function createOutputRefresh(output) {
  let key = "";
  let busy = false;
  let again = false;
  return async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    const session = current.session;
    const next = `${session.id}:${JSON.stringify(session.params.map((p) => p.value))}`;
    if (next === key) return;
    busy = true;
    try {
      output(await api.output(session.id));
      key = next;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error; // a 404 here is handled by the next line
    } finally {
      busy = false;
    }
    if (again) {
      again = false;
      refresh();
    }
  };
}

/**
 * `ui` holds the views (code, params, grads, graph, loss, optstate, extras), the editor, the
 * setup row, the controls, the timeline, share, output and parabola. Returns
 * `render(next, fresh, clicked)`: `fresh` for a new session (no Δ against the old one),
 * `clicked` the index of a line run out of order.
 */
export function createPainter(ui) {
  const { views } = ui;
  const refreshOutput = createOutputRefresh(ui.output);
  return function render(next, fresh = false, clicked = undefined) {
    const t0 = performance.now();
    const previous = fresh ? null : current.session;
    const session = (current.session = next);
    ui.editor.render(session); // before the code view: its tools read the new program
    current.codePanel = views.code(session, clicked !== undefined);
    views.params(session, previous);
    views.grads(session, previous);
    views.graph(session);
    views.loss(session);
    views.optstate(session, previous);
    views.extras(session);
    views.amp(session);
    ui.setup.render(session, current.scenarios);
    $("loss-value")?.classList.toggle("changed", Boolean(previous && previous.loss !== session.loss));
    markStores(document, session.last);
    ui.controls.render(session);
    ui.timeline.render(session, travelled.has(next));
    ui.share.render(session);
    ui.lesson?.(session);
    ui.author?.render(session);
    ui.doctor?.(session);
    $("iteration").textContent = `iteration ${session.iteration}, next: ${session.next_line}`;
    writeUrl(session, current.present);
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
    if (theta) ui.parabola(session);
    else refreshOutput();
  };
}
