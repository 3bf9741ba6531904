// A spec's regression on its validation split (issue 28): each row's prediction against its
// true value, with the diagonal where they would be equal.

import { display, toNumber } from "../format.js";
import { svg as el } from "./chart.js";

const W = 300, H = 240, P = 28;

export function scatter(out, svg) {
  const t = out.true.map(toNumber), p = out.predicted.map(toNumber);
  const finite = [...t, ...p].filter(Number.isFinite);
  const lo = Math.min(...finite), hi = Math.max(...finite);
  const span = hi - lo || 1;
  const x = (v) => P + ((v - lo) / span) * (W - 2 * P);
  const y = (v) => H - P - ((v - lo) / span) * (H - 2 * P);
  svg.append(
    el("rect", { x: P, y: P, width: W - 2 * P, height: H - 2 * P, class: "frame" }),
    el("line", { x1: x(lo), y1: y(lo), x2: x(hi), y2: y(hi), class: "fit" }),
    el("text", { x: W - P, y: H - 8, "text-anchor": "end", class: "tick" }, "true"),
    el("text", { x: P + 4, y: P - 8, class: "tick" }, "predicted"),
  );
  t.forEach((v, i) => {
    if (Number.isFinite(v) && Number.isFinite(p[i])) {
      svg.append(el("circle", { cx: x(v), cy: y(p[i]), r: 2.5, class: "pt pt1" }));
    }
  });
  return `Predicted against true on the ${out.split} split (${t.length} rows; on the diagonal they are equal): loss ${display(out.loss, "float64")}.`;
}
