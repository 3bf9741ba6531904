// A Session shown read-only: the loop (or, during a question, a note that it is hidden) and
// the stores, built from the stepper's own views so followers read the same numbers the same
// way. Used by the followers' page and the self-study question.

import { createCode } from "./code.js";
import { createGraph } from "./graph.js";
import { createGrads } from "./grads.js";
import { createLoss } from "./loss.js";
import { createOptState } from "./optstate.js";
import { createParams } from "./params.js";

const IO_WORDS = { read: "read", write: "written", "read write": "read + written" };

const MARKUP = `
  <div class="left">
    <section aria-label="Code" class="panel code-panel">
      <h2>The loop <span class="iteration"></span></h2>
      <div class="w-code"></div>
      <p class="w-hidden" hidden>The loop is hidden until the question is revealed: watch the
        numbers and decide which bug it is.</p>
    </section>
  </div>
  <div class="stores">
    <section aria-label="Parameters" class="panel store" data-store="params">
      <h2>Parameters <code>θ</code> <span class="io"></span></h2><div class="body w-params"></div></section>
    <section aria-label="Gradients" class="panel store" data-store="grad">
      <h2>Gradients <code>.grad</code> <span class="io"></span></h2><div class="body w-grads"></div></section>
    <section aria-label="Graph" class="panel store" data-store="graph">
      <h2>Graph <span class="io"></span></h2><div class="body w-graph"></div></section>
    <section aria-label="Loss" class="panel store" data-store="loss">
      <h2>Loss <span class="io"></span></h2><div class="body w-loss"></div></section>
    <section aria-label="Optimizer state" class="panel store w-opt" data-store="optimizer_state" hidden>
      <h2>Optimizer state <span class="opt-kind"></span> <span class="io"></span></h2>
      <p class="opt-step"></p><div class="body w-optstate"></div></section>
  </div>`;

/** Fill `root` (a main.layout) and return render(session): one repaint per Session. */
export function createWatch(root) {
  root.innerHTML = MARKUP;
  const $ = (cls) => root.querySelector(`.${cls}`);
  const code = $("w-code");
  let codeView = null; // built again after a question: hidden, the loop leaves the DOM too
  const views = {
    params: createParams($("w-params")),
    grads: createGrads($("w-grads")),
    graph: createGraph($("w-graph")),
    loss: createLoss($("w-loss"), (s) => s.params[0]?.dtype ?? "float64"),
    optstate: createOptState($("w-opt"), $("w-optstate")),
  };
  let previous = null;

  function highlight(s) {
    const reads = new Set(s.last?.reads ?? []);
    const writes = new Set(s.last?.writes ?? []);
    for (const section of root.querySelectorAll("[data-store]")) {
      const io = [reads.has(section.dataset.store) ? "read" : "", writes.has(section.dataset.store) ? "write" : ""]
        .filter(Boolean).join(" ");
      section.dataset.io = io;
      const badge = section.querySelector(".io");
      if (badge) badge.textContent = io ? `${IO_WORDS[io]} by ${s.last.line}` : "";
    }
  }

  return function render(session) {
    const shown = Array.isArray(session.program);
    code.hidden = !shown;
    $("w-hidden").hidden = shown;
    if (!shown) {
      code.replaceChildren();
      codeView = null;
    } else {
      codeView ??= createCode(code, () => {});
      codeView(session, false);
      // read-only: the lines show where the loop is, but run nothing
      for (const button of code.querySelectorAll("button")) button.disabled = true;
    }
    $("iteration").textContent = `iteration ${session.iteration}, next: ${session.next_line}`;
    views.params(session, previous);
    views.grads(session, previous);
    views.graph(session);
    views.loss(session);
    views.optstate(session, previous);
    highlight(session);
    previous = session;
  };
}
