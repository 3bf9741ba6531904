// The five stores as one block: Parameters, Gradients .grad, Graph, Loss and the optimizer's
// state, each a section with its heading, its read/written mark and its view. A followers'
// page and a question (watch.js) and the notebook's widget (widget.js) draw them with it, from
// a Session or anything in its shape: `params`, `graph`, `loss`, `history`, `optimizer`,
// `optimizer_state`, `last`.

import { createGraph } from "./graph.js";
import { createGrads } from "./grads.js";
import { createLoss } from "./loss.js";
import { markStores } from "./marks.js";
import { createOptState } from "./optstate.js";
import { createParams } from "./params.js";

const MARKUP = `
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
      <p class="opt-step"></p><div class="body w-optstate"></div></section>`;

/** Fill `root` (a `.stores` box) with the five stores; returns render(session, previous). */
export function createStores(root) {
  root.innerHTML = MARKUP;
  const $ = (cls) => root.querySelector(`.${cls}`);
  const views = {
    params: createParams($("w-params")),
    grads: createGrads($("w-grads")),
    graph: createGraph($("w-graph")),
    loss: createLoss($("w-loss"), (s) => s.params[0]?.dtype ?? "float64"),
    optstate: createOptState($("w-opt"), $("w-optstate")),
  };
  return function render(session, previous) {
    views.params(session, previous);
    views.grads(session, previous);
    views.graph(session);
    views.loss(session);
    views.optstate(session, previous);
    markStores(root, session.last);
  };
}
