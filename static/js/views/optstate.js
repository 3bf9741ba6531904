// The fifth store: what optimizer.state holds per parameter (momentum's buffer, or Adam's
// step, exp_avg, exp_avg_sq). Only step reads and writes it and zero_grad never touches it,
// which is why None and zeros differ once momentum is on (seed 001): a zero .grad still
// steps with the buffer, a None one is skipped. Plain SGD keeps no state, so the store hides.

import { createTensor } from "./tensor.js";

// a summary (a tensor past 256 elements) carries its shape
const shapeOf = (v) => (v?.summary ? v.shape : Array.isArray(v) ? [v.length, ...shapeOf(v[0])] : []);

function describeOptimizer(o) {
  if (o.title) return o.title; // a recorded trace names the user's own optimizers
  const decay = o.weight_decay ? `, weight_decay ${o.weight_decay}` : "";
  return o.kind === "adam"
    ? `Adam, betas (${o.betas.join(", ")})${decay}`
    : `SGD, momentum ${o.momentum}${decay}`;
}

export function createOptState(section, root) {
  const note = section.querySelector(".opt-kind");
  let key = "";
  let groups = [];
  return function render(session, previous) {
    const on = session.optimizer.stateful;
    section.hidden = !on;
    if (!on) return;
    note.textContent = describeOptimizer(session.optimizer);
    const dtype = session.params[0]?.dtype ?? "float64";
    const k = session.id + JSON.stringify(session.optimizer_state.map((p) =>
      [p.name, Object.entries(p.state).map(([name, v]) => [name, shapeOf(v)])]));
    if (k !== key) {
      groups = session.optimizer_state.map((p) => {
        const el = document.createElement("div");
        el.className = "pstate";
        el.dataset.param = p.name;
        const head = document.createElement("div");
        head.className = "pstate-head";
        head.innerHTML = "<code></code>";
        head.firstChild.textContent = `optimizer.state[${p.name}]`;
        el.append(head);
        const names = Object.keys(p.state);
        if (!names.length) {
          const empty = document.createElement("span");
          empty.className = "none-word value";
          empty.textContent = "empty";
          head.append(" ", empty);
        }
        const views = names.map((name) => {
          const where = () => (session.id ? { id: session.id, store: "state", name: p.name, key: name } : null);
          const view = createTensor(name, shapeOf(p.state[name]), dtype, "value", where);
          el.append(view.el);
          return [name, view];
        });
        return { el, views };
      });
      root.replaceChildren(...groups.map((g) => g.el));
      key = k;
      previous = null; // new buffers: nothing to compare with
    }
    session.optimizer_state.forEach((p, i) => {
      const before = previous?.optimizer_state[i]?.state;
      for (const [name, view] of groups[i].views) {
        view.render(p.state[name], before ? before[name] : undefined);
      }
    });
    section.querySelector(".opt-step")?.replaceChildren(
      `${session.optimizer_state.every((p) => !Object.keys(p.state).length) ? "Empty until the first step" : "Kept between steps"}; step reads and writes it, zero_grad never touches it.`,
    );
  };
}
