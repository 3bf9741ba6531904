// The notebook's stepper (issue 39): a trace `record` made of the user's own cell, stepped in
// the browser with the page's own views. The trace is the widget's synced state, so stepping
// needs no kernel and a saved notebook still steps. Bundled with the modules it imports into
// loop_stepper/notebook/widget.js (support/bundle.py): anywidget loads one string of JavaScript.

import { createSource } from "./views/source.js";
import { createStores } from "./views/stores.js";

const MARKUP = `
  <div class="ls-controls controls" role="group" aria-label="Step through the recorded cell">
    <button type="button" class="ls-back" aria-keyshortcuts="b ArrowLeft">Back</button>
    <button type="button" class="ls-next" aria-keyshortcuts="n ArrowRight">Next line</button>
    <label class="ls-slider">Timeline
      <input type="range" class="ls-timeline" min="0" max="0" value="0" step="1"></label>
    <output class="ls-where" aria-live="polite"></output>
  </div>
  <p class="ls-ended hint"></p>
  <div class="ls-diagnoses" aria-live="polite"></div>
  <div class="ls-layout">
    <section class="panel code-panel ls-code" aria-label="The cell">
      <h2><span class="ls-title">The cell</span> <span class="ls-iteration"></span></h2>
      <div class="ls-source"></div></section>
    <div class="stores"></div>
  </div>`;

/** A moment's Session-shaped view: what the page's views read. */
function unpack(trace, k, history) {
  const part = (i) => trace.parts[i];
  const m = k === 0 ? null : trace.moments[k - 1];
  const params = m
    ? m.params.map((p) => ({ ...p, value: part(p.value), grad: p.grad === null ? null : part(p.grad) }))
    : trace.start.params;
  const state = m
    ? m.optimizer_state.map((row) => ({ name: row.name, state: part(row.state) }))
    : trace.start.optimizer_state;
  return {
    id: null, // no server: a summary's elements are not fetched
    params,
    optimizer_state: state,
    graph: m ? part(m.graph) : trace.start.graph,
    loss: m ? m.loss : trace.start.loss,
    iteration: m ? m.iteration : 0,
    history: history.filter((h) => h.k <= k),
    optimizer: { stateful: trace.moments.some((x) => x.writes.includes("optimizer_state")), title: "optimizer.state" },
    last: m ? { line: m.code.split("\n")[0], reads: m.reads, writes: m.writes } : null,
  };
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "loop-stepper";
  root.tabIndex = 0;
  root.setAttribute("aria-label", "Loop Stepper: the recorded cell");
  root.innerHTML = MARKUP;
  el.replaceChildren(root);
  const $ = (cls) => root.querySelector(`.${cls}`);
  const stores = createStores($("stores"));
  let trace = null;
  const listings = new Map(); // a moment's file (null: the recorded cell) -> its listing
  let history = [];
  let at = 0;
  let shown = null;

  function load() {
    trace = model.get("trace");
    at = 0;
    shown = null;
    listings.clear();
    $("ls-source").replaceChildren();
    // the loss curve: each loss line's value, by iteration, as the page's history
    history = trace.moments.flatMap((m, i) =>
      m.writes.includes("loss") && m.loss !== null ? [{ k: i + 1, n: i, iteration: m.iteration, loss: m.loss }] : []);
    // why the recording ended: the user's error, the iterations asked for, the cap, or an
    // internal error of ours (the cell ran on all the same), each in its own words
    const internal = trace.internal_error?.component === "doctor"
      ? `The doctor stopped at an internal error (${trace.internal_error.type}: ${trace.internal_error.message}); the recording went on.`
      : null;
    const error = trace.error
      ? `Stopped by an error at line ${trace.error.line}: ${trace.error.type}: ${trace.error.message}`
      : null;
    const said = [trace.stopped, error, internal].filter((s) => s);
    $("ls-ended").textContent = said.length
      ? said.join(" ")
      : `Ran to its end: ${trace.moments.length} moments, ${trace.iterations} iterations.`;
    $("ls-timeline").max = String(trace.moments.length);
    go(0);
  }

  /** How the user knows a file: the notebook's "In [3]" for an earlier cell. */
  function titleOf(file) {
    return file === null ? "the cell" : trace.titles?.[file] ?? file;
  }

  /** The listing of `file` shown (made the first time), the others hidden: a moment inside a
   * function of an earlier cell shows that cell's source, its statement marked. */
  function listingOf(file) {
    if (!listings.has(file)) {
      const box = document.createElement("div");
      $("ls-source").append(box);
      const text = file === null ? trace.source ?? "" : trace.sources?.[file] ?? "";
      const show = createSource(box, text);
      box.firstChild.setAttribute("aria-label", file === null ? "The cell's source" : `The source of ${titleOf(file)}`);
      listings.set(file, { box, show });
    }
    for (const [f, { box }] of listings) box.hidden = f !== file;
    return listings.get(file).show;
  }

  function go(k) {
    at = Math.max(0, Math.min(trace.moments.length, k));
    const session = unpack(trace, at, history);
    stores(session, shown);
    shown = session;
    const m = at === 0 ? null : trace.moments[at - 1];
    const file = m?.file ?? null;
    const name = titleOf(file);
    listingOf(file)(m ? m.line : null, m ? m.line + m.code.split("\n").length - 1 : null);
    const heading = file === null ? "The cell" : `${m.function ?? "code"}() in ${name}`;
    $("ls-title").textContent = heading;
    $("ls-code").setAttribute("aria-label", heading);
    const of = file === null ? "" : ` of ${name}`;
    const where = m
      ? `moment ${at} of ${trace.moments.length} — after line ${m.line}${of}: ${m.code.split("\n")[0]}`
      : `moment 0 of ${trace.moments.length} — the start`;
    $("ls-where").textContent = where;
    const slider = $("ls-timeline");
    slider.value = String(at);
    slider.setAttribute("aria-valuetext", where);
    $("ls-back").disabled = at === 0;
    $("ls-next").disabled = at === trace.moments.length;
    $("ls-iteration").textContent = m ? `iteration ${m.iteration}` : "";
    const here = (trace.diagnoses ?? []).filter((d) => d.moment === at - 1);
    $("ls-diagnoses").replaceChildren(...here.map((d) => {
      const p = document.createElement("p");
      p.className = "diagnosis";
      p.textContent = `line ${d.line}: ${d.bug} — ${d.message}`;
      return p;
    }));
  }

  $("ls-next").addEventListener("click", () => go(at + 1));
  $("ls-back").addEventListener("click", () => go(at - 1));
  $("ls-timeline").addEventListener("input", (e) => go(Number(e.target.value)));
  // the page's keys, while the widget has the focus; kept from the notebook's own shortcuts
  root.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.target.matches?.("input[type=range]")) return;
    const step = { n: 1, ArrowRight: 1, b: -1, ArrowLeft: -1 }[e.key];
    if (step === undefined) return;
    e.preventDefault();
    e.stopPropagation();
    go(at + step);
  });
  model.on("change:trace", load);
  load();
}

export default { render };
