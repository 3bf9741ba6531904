// The output view: what the model computes now. Neuron: the four points and the line
// w·x + b. Moons: P(class 1) on a grid as a heat map under the training points (circles for
// class 0, crosses for class 1, so the classes differ in shape as well as colour).

import { display, toNumber } from "../format.js";
import { svg } from "./chart.js";
import { heat } from "./tensor.js";

const W = 300, H = 240, P = 28;
const el = svg;

function neuron(out, svg, caption) {
  const xs = [0, 5], ys = [-1, 8];
  const x = (v) => P + ((v - xs[0]) / (xs[1] - xs[0])) * (W - 2 * P);
  const y = (v) => H - P - ((v - ys[0]) / (ys[1] - ys[0])) * (H - 2 * P);
  svg.append(
    el("line", { x1: x(0), y1: y(0), x2: x(5), y2: y(0), class: "axis" }),
    el("line", { x1: x(0), y1: y(-1), x2: x(0), y2: y(8), class: "axis" }),
    el("text", { x: x(5), y: y(0) + 16, "text-anchor": "end", class: "tick" }, "x"),
    el("text", { x: x(0) + 6, y: y(8) + 10, class: "tick" }, "y"),
  );
  for (let k = 1; k <= 4; k++) {
    svg.append(el("text", { x: x(k), y: y(0) + 16, "text-anchor": "middle", class: "tick" }, String(k)));
  }
  const [lx, ly] = [out.line.x, out.line.y.map(toNumber)];
  const clip = el("clipPath", { id: "plot-clip" });
  clip.append(el("rect", { x: P, y: P, width: W - 2 * P, height: H - 2 * P }));
  svg.append(clip);
  if (ly.every(Number.isFinite)) {
    svg.append(el("line", {
      x1: x(lx[0]), y1: y(ly[0]), x2: x(lx[1]), y2: y(ly[1]), class: "fit", "clip-path": "url(#plot-clip)",
    }));
  }
  out.points.forEach((p, i) => {
    svg.append(el("circle", { cx: x(p[0]), cy: y(out.targets[i]), r: 5, class: "pt pt1" }));
  });
  const slope = (ly[1] - ly[0]) / (lx[1] - lx[0]);
  caption.textContent = `The line w·x + b and the ${out.points.length === 4 ? "four " : ""}training points; at x = 0 it is ${display(ly[0], "float32")}, slope ${display(slope, "float32")}.`;
}

function moons(out, svg, caption) {
  const [x0, x1, y0, y1] = out.extent;
  const x = (v) => P + ((v - x0) / (x1 - x0)) * (W - 2 * P);
  const y = (v) => H - P - ((v - y0) / (y1 - y0)) * (H - 2 * P);
  const rows = out.p.length, cols = out.p[0].length;
  const cw = (W - 2 * P) / cols, ch = (H - 2 * P) / rows;
  const grid = el("g", { class: "grid" });
  out.p.forEach((row, r) => row.forEach((v, c) => {
    // rows come bottom-up; a probability around 0.5 is pale, a confident one strong
    grid.append(el("rect", {
      x: (P + c * cw).toFixed(2), y: (H - P - (r + 1) * ch).toFixed(2),
      width: (cw + 0.3).toFixed(2), height: (ch + 0.3).toFixed(2), fill: heat(toNumber(v) - 0.5, 0.5),
    }));
  }));
  svg.append(grid);
  out.points.forEach((p, i) => {
    const cx = x(p[0]), cy = y(p[1]);
    if (out.targets[i] === 1) {
      svg.append(el("path", { d: `M${cx - 3},${cy - 3}L${cx + 3},${cy + 3}M${cx - 3},${cy + 3}L${cx + 3},${cy - 3}`, class: "pt pt1" }));
    } else {
      svg.append(el("circle", { cx, cy, r: 2.8, class: "pt pt0" }));
    }
  });
  svg.append(el("rect", { x: P, y: P, width: W - 2 * P, height: H - 2 * P, class: "frame" }));
  caption.textContent = `P(class 1) on a ${rows}×${cols} grid: orange towards class 1 (crosses), blue towards class 0 (circles), pale near 0.5.`;
}

export function createOutput(root) {
  // labelled from the start: the output arrives after the page, and an unlabelled role="img"
  // in between is what a screen reader (and axe) would meet
  const svg = el("svg", {
    viewBox: `0 0 ${W} ${H}`, class: "output-chart", role: "img", "aria-label": "the model's output: loading",
  });
  const caption = document.createElement("p");
  caption.className = "caption";
  root.replaceChildren(svg, caption);
  return function render(out) {
    svg.replaceChildren();
    if (out.kind === "line") neuron(out, svg, caption);
    else moons(out, svg, caption);
    svg.setAttribute("aria-label", caption.textContent);
  };
}
