// The Loss store: the latest loss line's value, and the curve over iterations (the server
// keeps the newest 1000 points). Non-finite losses break the line and are said in words.

import { display, exact, exactTitle, toNumber } from "../format.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 320, H = 150, L = 44, R = 8, T = 8, B = 22;

function el(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Polyline path through the finite points; a NaN or infinity starts a new piece. */
export function path(points, x, y) {
  let d = "";
  let pen = "M";
  for (const p of points) {
    const v = toNumber(p.loss);
    if (!Number.isFinite(v)) {
      pen = "M";
      continue;
    }
    d += `${pen}${x(p.iteration).toFixed(1)},${y(v).toFixed(1)}`;
    pen = "L";
  }
  return d;
}

export function createLoss(root, dtypeOf) {
  const value = document.createElement("p");
  value.className = "loss-value";
  const chart = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "loss-chart", role: "img" });
  root.replaceChildren(value, chart);

  return function render(session) {
    const dtype = dtypeOf(session);
    const text = session.loss === null ? "None" : display(session.loss, dtype);
    value.innerHTML = `<code>loss</code> = <span class="value" id="loss-value"></span>`;
    value.querySelector(".value").textContent = text;
    if (session.loss !== null) value.querySelector(".value").title = exactTitle(session.loss, dtype);
    value.classList.toggle("none", session.loss === null);

    const hist = session.history;
    const finite = hist.map((p) => toNumber(p.loss)).filter(Number.isFinite);
    chart.replaceChildren();
    const x0 = hist.length ? hist[0].iteration : 0;
    const x1 = Math.max(x0 + 1, hist.length ? hist[hist.length - 1].iteration : 1);
    const yMax = finite.length ? Math.max(...finite) : 1;
    const yTop = yMax > 0 ? yMax * 1.05 : 1;
    const x = (i) => L + ((i - x0) / (x1 - x0)) * (W - L - R);
    const y = (v) => T + (1 - Math.max(0, v) / yTop) * (H - T - B);
    chart.append(
      el("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }),
      el("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }),
      el("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "tick" }, exact(Number(yTop.toPrecision(3)))),
      el("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "tick" }, "0"),
      el("text", { x: L, y: H - 6, class: "tick" }, String(x0)),
      el("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "tick" }, `iteration ${x1}`),
    );
    if (hist.length) {
      chart.append(el("path", { d: path(hist, x, y), class: "curve" }));
      const last = hist[hist.length - 1];
      const lv = toNumber(last.loss);
      if (Number.isFinite(lv)) chart.append(el("circle", { cx: x(last.iteration), cy: y(lv), r: 3.5, class: "dot" }));
    }
    const bad = hist.length - finite.length;
    chart.setAttribute(
      "aria-label",
      hist.length
        ? `Loss over ${hist.length} iterations, from ${display(hist[0].loss, dtype)} to ${display(hist[hist.length - 1].loss, dtype)}` +
            (bad ? `; ${bad} not finite` : "")
        : "No loss yet: run the loss line",
    );
  };
}
