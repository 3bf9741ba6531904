// A look at a spec's training rows (issue 28), as the server's check sends them: a scatter
// for two features, 8 × 8 images for digits, else the first rows as a table.

import { svg as el } from "./chart.js";

const HUES = [212, 28, 130, 280, 0, 50, 170, 320, 90, 250];

export function preview(root, p) {
  if (!p) return root.replaceChildren();
  if (p.kind === "scatter") return root.replaceChildren(scatter(p));
  if (p.kind === "images") return root.replaceChildren(...p.rows.map((row, i) => image(row, p.targets[i])));
  const table = document.createElement("table");
  const caption = document.createElement("caption");
  caption.textContent = `The first ${p.rows.length} training rows`;
  const head = document.createElement("tr");
  for (const name of [...p.features, "target"]) {
    const th = document.createElement("th");
    th.textContent = name;
    th.setAttribute("scope", "col");
    head.append(th);
  }
  table.append(caption, head, ...p.rows.map((row, i) => {
    const tr = document.createElement("tr");
    for (const v of [...row.map((x) => Number(x.toPrecision(4))), p.targets[i]]) {
      const td = document.createElement("td");
      td.textContent = String(v);
      tr.append(td);
    }
    return tr;
  }));
  // a set of 30 features is wider than the page: the table scrolls in its own box, a named
  // Tab stop so the keyboard can scroll it too
  const box = Object.assign(document.createElement("div"), { className: "preview-rows", tabIndex: 0 });
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", `${caption.textContent}, ${p.features.length} features: scrolls sideways`);
  box.append(table);
  return root.replaceChildren(box);
}

function scatter(p) {
  const W = 160, H = 120, P = 6;
  const xs = p.rows.map((r) => r[0]), ys = p.rows.map((r) => r[1]);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const classes = [...new Set(p.targets)].sort();
  const chart = el("svg", {
    viewBox: `0 0 ${W} ${H}`, class: "preview-chart", role: "img",
    "aria-label": `The first ${p.rows.length} training points, coloured by class (${classes.join(", ")})`,
  });
  p.rows.forEach(([x, y], i) => {
    const k = classes.indexOf(p.targets[i]);
    chart.append(el("circle", {
      cx: P + ((x - x0) / (x1 - x0 || 1)) * (W - 2 * P), cy: H - P - ((y - y0) / (y1 - y0 || 1)) * (H - 2 * P),
      r: 1.8, fill: typeof p.targets[i] === "number" && classes.length > 20 ? "#555" : `hsl(${HUES[k % 10]} 70% 45%)`,
    }));
  });
  return chart;
}

function image(row, target) {
  const lo = Math.min(...row), hi = Math.max(...row);
  const chart = el("svg", { viewBox: "0 0 8 8", class: "preview-image", role: "img", "aria-label": `an 8 × 8 image of class ${target}` });
  row.forEach((v, i) => {
    const light = 100 - (100 * (v - lo)) / (hi - lo || 1);
    chart.append(el("rect", { x: i % 8, y: Math.floor(i / 8), width: 1.02, height: 1.02, fill: `hsl(0 0% ${light.toFixed(0)}%)` }));
  });
  return chart;
}
