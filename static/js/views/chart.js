// A line chart in plain SVG for the views that plot several series against the iteration
// (the parabola's θ with its theory, compare mode's losses and weights). Series are polylines,
// optionally with dots; a NaN or infinity breaks the line; horizontal marks (θ*, an envelope)
// are labelled lines. Styles come from classes in page.css, never inline.

import { exact, toNumber } from "../format.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 340, H = 190, L = 46, R = 10, T = 10, B = 24;
const MAX_DOTS = 150; // past this many points the line alone reads better (and paints faster)
let clips = 0;

export function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

const tick = (v) => exact(Number(v.toPrecision(3)));

/** Polyline path through the finite points; a non-finite one starts a new piece. */
export function linePath(points, x, y) {
  let d = "";
  let pen = "M";
  for (const [px, py] of points) {
    const v = toNumber(py);
    if (!Number.isFinite(v)) {
      pen = "M";
      continue;
    }
    d += `${pen}${x(px).toFixed(1)},${y(v).toFixed(1)}`;
    pen = "L";
  }
  return d;
}

/**
 * `render({series, marks, xRange, include})`: series = [{cls, points: [[x, y]], dots}],
 * marks = [{y, cls, label}] horizontal lines, xRange = [x0, x1] (else from the data),
 * include = y values the axis must show (θ*, the start), floor = no margin below this value.
 */
export function createChart(root, { xLabel = "iteration", cls = "" } = {}) {
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: `series-chart ${cls}`, role: "img" });
  const clipId = `chart-clip-${++clips}`;
  root.append(chart);
  return function render({ series, marks = [], xRange, include = [], floor, aria }) {
    const xs = [], ys = [...include];
    for (const s of series) {
      for (const [px, py] of s.points) {
        xs.push(px);
        if (!s.soft) ys.push(toNumber(py));
      }
    }
    for (const m of marks) ys.push(m.y);
    const finite = ys.filter(Number.isFinite);
    let [x0, x1] = xRange ?? [xs.length ? Math.min(...xs) : 0, Math.max(1, ...xs)];
    if (x1 <= x0) x1 = x0 + 1;
    let y0 = finite.length ? Math.min(...finite) : 0;
    let y1 = finite.length ? Math.max(...finite) : 1;
    const pad = (y1 - y0) * 0.08 || Math.abs(y0) * 0.1 || 1; // a flat series stays readable
    y0 = floor !== undefined && y0 >= floor ? floor : y0 - pad; // a loss axis starts at 0
    y1 += pad;
    const x = (v) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
    const y = (v) => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
    const clip = svg("clipPath", { id: clipId });
    clip.append(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B }));
    chart.replaceChildren(
      clip,
      svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }),
      svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }),
      svg("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "tick" }, tick(y1)),
      svg("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "tick" }, tick(y0)),
      svg("text", { x: L, y: H - 6, class: "tick" }, String(Math.round(x0))),
      svg("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "tick" }, `${xLabel} ${Math.round(x1)}`),
    );
    const plot = svg("g", { "clip-path": `url(#${clipId})` });
    for (const m of marks) {
      if (!Number.isFinite(m.y)) continue;
      plot.append(svg("line", { x1: L, y1: y(m.y), x2: W - R, y2: y(m.y), class: `mark ${m.cls ?? ""}` }));
      if (m.label) {
        plot.append(svg("text", { x: W - R - 2, y: y(m.y) - 3, "text-anchor": "end", class: `tick mark-label ${m.cls ?? ""}` }, m.label));
      }
    }
    for (const s of series) {
      plot.append(svg("path", { d: linePath(s.points, x, y), class: `series ${s.cls}` }));
      if (s.dots && s.points.length <= MAX_DOTS) {
        const dots = svg("g", { class: `dots ${s.cls}` });
        for (const [px, py] of s.points) {
          const v = toNumber(py);
          if (Number.isFinite(v)) dots.append(svg("circle", { cx: x(px).toFixed(1), cy: y(v).toFixed(1), r: 2.8 }));
        }
        plot.append(dots);
      }
    }
    chart.append(plot);
    chart.setAttribute("aria-label", aria ?? "");
  };
}

/** A legend in words with a line sample per series: colour is never the only cue. */
export function legend(items) {
  const p = document.createElement("p");
  p.className = "chart-legend";
  for (const { cls, text } of items) {
    const item = document.createElement("span");
    item.className = "item";
    const sample = svg("svg", { viewBox: "0 0 24 8", class: "sample", "aria-hidden": "true" });
    sample.append(svg("line", { x1: 0, y1: 4, x2: 24, y2: 4, class: `series ${cls}` }));
    item.append(sample, document.createTextNode(` ${text}`));
    p.append(item);
  }
  return p;
}
