// The output view: what the model computes now. Neuron: the four points and the line
// w·x + b. Moons: P(class 1) on a grid as a heat map under the training points (circles for
// class 0, crosses for class 1, so the classes differ in shape as well as colour). A spec's
// model (issue 28): its fitted curve, its decision regions (a colour per class past two), or
// on its validation split a confusion matrix (confusion.js) or predicted against true
// (scatter.js).

import { display, toNumber } from "../format.js";
import { svg } from "./chart.js";
import { confusion } from "./confusion.js";
import { scatter } from "./scatter.js";
import { heat } from "./tensor.js";

const PALETTE = [212, 28, 130, 280, 0, 50, 170, 320, 90, 250]; // a hue per class (up to 10)

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

/** A spec's 1-D regression: the fitted curve over its own points' extent. */
function curve(out, svg, caption) {
  const px = out.points.map((p) => p[0]), py = out.targets.map(toNumber);
  const ly = out.line.y.map(toNumber);
  const all = [...py, ...ly].filter(Number.isFinite);
  const [x0, x1] = [Math.min(...px, ...out.line.x), Math.max(...px, ...out.line.x)];
  const [y0, y1] = [Math.min(...all), Math.max(...all)];
  const x = (v) => P + ((v - x0) / (x1 - x0 || 1)) * (W - 2 * P);
  const y = (v) => H - P - ((v - y0) / (y1 - y0 || 1)) * (H - 2 * P);
  svg.append(el("rect", { x: P, y: P, width: W - 2 * P, height: H - 2 * P, class: "frame" }));
  px.forEach((v, i) => svg.append(el("circle", { cx: x(v), cy: y(py[i]), r: 3, class: "pt pt1" })));
  const d = out.line.x.map((v, i) => `${i ? "L" : "M"}${x(v).toFixed(1)},${y(ly[i]).toFixed(1)}`).join("");
  if (ly.every(Number.isFinite)) svg.append(el("path", { d, class: "fit", fill: "none" }));
  caption.textContent = `The model's curve over x from ${display(x0, "float64")} to ${display(x1, "float64")}, and the ${px.length} training points.`;
}

/** More than two classes: the likeliest class per cell, paler where it is less sure. */
function regions(out, svg, caption) {
  const [x0, x1, y0, y1] = out.extent;
  const x = (v) => P + ((v - x0) / (x1 - x0)) * (W - 2 * P);
  const y = (v) => H - P - ((v - y0) / (y1 - y0)) * (H - 2 * P);
  const rows = out.label.length, cols = out.label[0].length;
  const cw = (W - 2 * P) / cols, ch = (H - 2 * P) / rows;
  const grid = el("g", { class: "grid" });
  out.label.forEach((row, r) => row.forEach((k, c) => {
    const light = 95 - 40 * toNumber(out.p[r][c]);
    grid.append(el("rect", {
      x: (P + c * cw).toFixed(2), y: (H - P - (r + 1) * ch).toFixed(2),
      width: (cw + 0.3).toFixed(2), height: (ch + 0.3).toFixed(2),
      fill: `hsl(${PALETTE[k % PALETTE.length]} 70% ${light}%)`,
    }));
  }));
  svg.append(grid);
  out.points.forEach((p, i) => svg.append(el("circle", {
    cx: x(p[0]), cy: y(p[1]), r: 2.6, class: "pt", stroke: "#222",
    fill: `hsl(${PALETTE[out.targets[i] % PALETTE.length]} 70% 45%)`,
  })));
  svg.append(el("rect", { x: P, y: P, width: W - 2 * P, height: H - 2 * P, class: "frame" }));
  caption.textContent = `The likeliest class on a ${rows}×${cols} grid, a colour per class (paler where the model is less sure), and the training points in their class's colour.`;
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
  const table = document.createElement("table");
  table.className = "confusion";
  table.hidden = true;
  root.replaceChildren(svg, table, caption);
  return function render(out) {
    svg.replaceChildren();
    table.hidden = out.kind !== "confusion";
    svg.hidden = out.kind === "confusion";
    if (out.kind === "confusion") {
      confusion(out, table);
      caption.textContent = "";
      return;
    }
    if (out.kind === "scatter") caption.textContent = scatter(out, svg);
    else if (out.kind === "line" && out.line.x.length > 2) curve(out, svg, caption);
    else if (out.kind === "line") neuron(out, svg, caption);
    else if (out.label) regions(out, svg, caption);
    else moons(out, svg, caption);
    svg.setAttribute("aria-label", caption.textContent);
  };
}
