// The Graph store: the real grad_fn chain from the API, with PyTorch's class names, drawn
// top (the loss) to bottom (AccumulateGrad → parameter), the direction backward walks.
// Status is text and style: empty (nothing), built (solid), freed (dashed and greyed).
// Under autocast a node that made a 16-bit tensor says so (AddmmBackward0 · bfloat16).
// Narrower than the drawing (a phone, moons), it shrinks to at most 3/4 and then scrolls
// sideways inside its own box (page.css), which the keyboard can then reach too.

import { svg } from "./chart.js";
import { place } from "./layout.js";

const STATUS = {
  empty: "empty: no graph yet (forward builds one)",
  built: "built: backward can walk it",
  freed: "freed: backward released its saved tensors; a second backward fails",
};

export function createGraph(root) {
  const status = document.createElement("p");
  status.className = "graph-status";
  const figure = document.createElement("div");
  figure.className = "graph-figure";
  root.replaceChildren(status, figure);
  let drawn = "";
  // a box that scrolls is a Tab stop, named, so its hidden part is reachable without a mouse
  const scrolls = () => {
    const on = figure.scrollWidth > figure.clientWidth + 1;
    if (on === figure.hasAttribute("tabindex")) return;
    for (const [key, value] of [["tabindex", "0"], ["role", "group"], ["aria-label", "Graph, scrolls sideways"]]) {
      if (on) figure.setAttribute(key, value);
      else figure.removeAttribute(key);
    }
  };
  new ResizeObserver(scrolls).observe(figure);

  return function render(session) {
    const graph = session.graph;
    const half = (n) => n.dtype === "bfloat16" || n.dtype === "float16";
    const g = { ...graph, nodes: graph.nodes.map((n) => half(n) ? { ...n, label: `${n.label} · ${n.dtype}` } : n) };
    status.dataset.status = g.status;
    status.innerHTML = `Status: <strong class="status-word">${g.status}</strong> <span>${STATUS[g.status].slice(g.status.length + 1)}</span>`;
    root.dataset.status = g.status;
    const key = JSON.stringify([g.nodes, g.edges]);
    if (key === drawn) return;
    drawn = key;
    if (!g.nodes.length) {
      figure.replaceChildren();
      return;
    }
    const { boxes, width, height } = place(g.nodes, g.edges);
    const pad = 4;
    const root_ = svg("svg", {
      viewBox: `${-pad} ${-pad} ${width + 2 * pad} ${height + 2 * pad}`,
      width: width + 2 * pad,
      role: "img",
      "aria-label": `Autograd graph, ${g.nodes.length} nodes: ${g.nodes.map((n) => n.label).join(", ")}`,
    });
    const defs = svg("defs");
    const marker = svg("marker", {
      id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7,
      orient: "auto-start-reverse",
    });
    marker.append(svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrowhead" }));
    defs.append(marker);
    root_.append(defs);
    for (const e of g.edges) {
      const a = boxes.get(e.source);
      const b = boxes.get(e.target);
      if (!a || !b) continue;
      const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y;
      const my = (y1 + y2) / 2;
      root_.append(svg("path", {
        d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`,
        class: "edge", "marker-end": "url(#arrow)",
      }));
    }
    for (const n of g.nodes) {
      const b = boxes.get(n.id);
      const leaf = n.label.startsWith("AccumulateGrad");
      const group = svg("g", { class: `node${leaf ? " leaf" : ""}`, "data-id": n.id });
      group.append(svg("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: leaf ? 2 : 9 }));
      const text = svg("text", { x: b.x + b.w / 2, y: b.y + b.h / 2 + 4, "text-anchor": "middle" });
      text.textContent = n.label;
      group.append(text);
      root_.append(group);
    }
    root_.style.setProperty("--natural", String(width + 2 * pad)); // its size unscaled
    figure.replaceChildren(root_);
    scrolls();
  };
}
