// Compare mode's picture of the pair (the lesson's figure F4): both loops' panes lined up in
// lockstep (lockstep.js), both losses on one chart, both weight trajectories on another, the
// controls showing the pair's setup, and the URL and the way back to the stepper saying it.

import { lineUp, view } from "../lockstep.js";
import { setupParams } from "../state.js";
import { createChart, legend } from "./chart.js";
import { createPane } from "./pane.js";
import { measured } from "./parabola.js";

const $ = (id) => document.getElementById(id);
// the least-squares weight of the four points, where the correct loop settles (lesson F4)
const SETTLES = { neuron: ["least squares w = 1.4", 1.4] };

/** The stepper's URL for the bug's side: its scenario, lr, optimizer, setup and preset. */
function backTo(pair, shown) {
  const q = new URLSearchParams(shown);
  q.delete("compare");
  q.set("preset", pair.bug.name);
  setupParams(pair.sessions.bug, q);
  return q;
}

/**
 * `pair` is the pair (pair.js), `els` compare mode's controls, `optimizers` OPTIMIZERS,
 * `correctNote` the correct loop's explanation; `onLine(side, entry, index)` runs one line
 * in one pane. Returns the panes and `render(fresh)`, which paints the pair as it is.
 */
export function createComparison({ pair, els, optimizers, correctNote, onLine }) {
  const panes = {
    correct: createPane(document.querySelector('[data-pane="correct"]'),
      (entry, index) => onLine("correct", entry, index)),
    bug: createPane(document.querySelector('[data-pane="bug"]'),
      (entry, index) => onLine("bug", entry, index)),
  };
  const lossChart = createChart($("c-losses"));
  const weightChart = createChart($("c-weights"));
  for (const id of ["c-losses", "c-weights"]) {
    $(id).append(legend([{ cls: "correct", text: "correct loop" }, { cls: "bug", text: "with the bug" }]));
  }
  let renders = 0;

  function charts(a, b) {
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
  }

  /** The controls show the pair's setup; the URL keeps it, and the way back opens the bug. */
  function setup(a) {
    els.scenario.value = a.scenario;
    if (document.activeElement !== els.lr) els.lr.value = String(a.lr);
    els.bug.value = pair.bug.name;
    els.optimizer.value = pair.optimizer;
    const q = new URLSearchParams({ compare: pair.bug.name, scenario: a.scenario, lr: String(a.lr) });
    const spec = optimizers[pair.optimizer];
    if (spec) {
      q.set("optimizer", spec.kind);
      if (spec.kind === "sgd") q.set("momentum", String(spec.momentum));
      q.set("weight_decay", String(spec.weight_decay));
    }
    history.replaceState(null, "", `${location.pathname}?${q}`);
    $("c-back").href = `./?${backTo(pair, q)}`;
  }

  function render(fresh = false) {
    const { sessions, bug } = pair;
    const a = sessions.correct, b = sessions.bug;
    const lined = lineUp(sessions, pair.apart);
    panes.correct.render(a, fresh, "The correct loop", correctNote, view(lined, sessions, "correct"));
    panes.bug.render(b, fresh, `With the bug: ${bug.title}`, bug.explanation, view(lined, sessions, "bug"));
    document.body.dataset.lockstep = lined.at === null ? "apart" : String(lined.at);
    document.querySelector('[data-pane="bug"]').setAttribute("aria-label", `Loop with the bug: ${bug.title}`);
    charts(a, b);
    setup(a);
    pair.keep();
    document.body.dataset.renders = String(++renders);
  }

  return { panes, render };
}
