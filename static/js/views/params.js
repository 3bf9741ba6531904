// Parameters: what step moves. Each tensor keeps its own view, so a repaint only updates it.

import { createTensor } from "./tensor.js";

export function createParams(root) {
  let views = null;
  let key = "";
  let id = "";
  return function render(session, previous) {
    id = session.id;
    const k = session.params.map((p) => `${p.name}:${p.shape}`).join();
    if (k !== key) {
      views = session.params.map((p) =>
        createTensor(p.name, p.shape, p.dtype, "value", () => (id ? { id, store: "params", name: p.name } : null)),
      );
      root.replaceChildren(...views.map((v) => v.el));
      key = k;
      previous = null; // a different model: nothing to compare with
    }
    session.params.forEach((p, i) => views[i].render(p.value, previous?.params[i]?.value));
  };
}
