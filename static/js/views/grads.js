// Gradients: the .grad buffers. None is the word None (a buffer that does not exist), never a
// blank or a zero, and growth must be obvious when buffers pile up without zero_grad: small
// tensors print their numbers, big ones add their size (the L2 norm) against the largest size
// seen this session, so a doubling buffer doubles its bar even when the heat map rescales.

import { exact, toNumber } from "../format.js";
import { createTensor } from "./tensor.js";

function norm(grad) {
  let sum = 0;
  for (const v of [grad].flat(Infinity)) sum += toNumber(v) ** 2;
  return Math.sqrt(sum);
}

export function createGrads(root) {
  let views = null;
  let bars = [];
  let key = "";
  let most = 0; // running maximum of the norms, so the bars share one scale over time
  return function render(session, previous) {
    const k = `${session.id}:${session.params.map((p) => `${p.name}:${p.shape}`).join()}`;
    if (k !== key) {
      const id = session.id; // in the key: a new session makes new views
      views = session.params.map((p) =>
        createTensor(p.name, p.shape, p.dtype, "grad", () => (id ? { id, store: "grad", name: p.name } : null)),
      );
      bars = views.map((v) => {
        if (!v.big) return null;
        const bar = document.createElement("div");
        bar.className = "normbar";
        bar.innerHTML = '<span class="fill"></span><span class="text"></span>';
        v.el.append(bar);
        return bar;
      });
      root.replaceChildren(...views.map((v) => v.el));
      key = k;
      most = 0;
      previous = null;
    }
    if (session.iteration === 0 && session.params.every((p) => p.grad === null)) most = 0;
    session.params.forEach((p, i) => {
      views[i].render(p.grad, previous ? previous.params[i]?.grad : undefined);
      const bar = bars[i];
      if (!bar) return;
      if (p.grad === null) {
        bar.hidden = true;
        return;
      }
      const n = p.grad.summary ? toNumber(p.grad.norm) : norm(p.grad); // a summary has its norm
      if (Number.isFinite(n)) most = Math.max(most, n);
      bar.hidden = false;
      bar.querySelector(".fill").style.width = `${most > 0 ? Math.min(100, (100 * n) / most) : 0}%`;
      bar.querySelector(".text").textContent = `‖grad‖ = ${exact(Number(n.toPrecision(4)))}`;
    });
  };
}
