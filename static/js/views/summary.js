// A big tensor (more than 256 elements, issue 28): the server sends its summary, not its
// elements (docs/api.md, "Big tensors"). Shown as the summary's heat map of block means (at
// most 32 × 32), its numbers and its histogram. A click on a block, or Enter on the focused
// one (arrow keys move), fetches that block's exact elements through
// GET /api/sessions/{id}/tensor and lists them; on .grad each is an "explain this number"
// button (explain.js picks up .value[data-index]).

import { api } from "../api.js";
import { exact, exactTitle, short, toNumber } from "../format.js";

const LISTED = 256; // elements of one block listed at most
const PAGE = 4096; // the endpoint's largest page

/** Diverging colour as tensor.js's heat(): blue below zero, orange above. */
function colour(v, scale) {
  const x = toNumber(v);
  if (!Number.isFinite(x)) return "#000";
  const t = scale > 0 ? Math.min(1, Math.abs(x) / scale) : 0;
  const light = 97 - 52 * t;
  return x < 0 ? `hsl(212 70% ${light}%)` : `hsl(28 90% ${light}%)`;
}

function unravel(flat, shape) {
  const index = [];
  for (let k = shape.length - 1; k >= 0; k--) {
    index.unshift(flat % shape[k]);
    flat = Math.floor(flat / shape[k]);
  }
  return index;
}

/** Block i of `starts` runs from starts[i] to the next start (or `length`). */
const span = (starts, i, length) => [starts[i], starts[i + 1] ?? length];

/**
 * The summary view of tensor `label` (name or name.grad) in `body`. `where()` says which
 * tensor to page: {id, store, name, key?}. Returns `render(summary, previous)`.
 */
export function createSummary(body, label, dtype, where) {
  const stats = document.createElement("div");
  stats.className = "sumstats value";
  const map = document.createElement("div");
  map.className = "summap";
  map.tabIndex = 0;
  map.setAttribute("role", "img");
  const hist = document.createElement("div");
  hist.className = "sumhist";
  hist.setAttribute("role", "img");
  const readout = document.createElement("output");
  readout.className = "readout";
  readout.textContent = "a block: click, or focus and Enter, for its elements";
  const elements = document.createElement("div");
  elements.className = "sumelements";
  elements.setAttribute("aria-live", "polite");
  // it scrolls past 12 rem: focusable, so the keyboard can scroll it too
  elements.tabIndex = 0;
  elements.setAttribute("role", "region");
  elements.setAttribute("aria-label", `${label}: a block's elements`);
  body.replaceChildren(stats, map, hist, readout, elements);

  let cellEls = [];
  let grid = "";
  let current = null;
  let focus = 0;
  let open = -1; // the block whose elements are listed, fetched again on each repaint
  let asked = 0; // answers to older requests are dropped

  function bounds(b) {
    const h = current.heatmap;
    const cols = h.cols.length;
    const [r0, r1] = span(h.rows, Math.floor(b / cols), h.shape[0]);
    const [c0, c1] = span(h.cols, b % cols, h.shape[1]);
    return { r0, r1, c0, c1 };
  }

  function describe(b) {
    const { r0, r1, c0, c1 } = bounds(b);
    const cell = current.heatmap.cells[Math.floor(b / current.heatmap.cols.length)][b % current.heatmap.cols.length];
    return `rows ${r0}–${r1 - 1}, columns ${c0}–${c1 - 1}: mean ${short(cell, "float64")}`;
  }

  function show(b) {
    focus = b;
    cellEls.forEach((c) => c.classList.remove("focus"));
    cellEls[b]?.classList.add("focus");
    readout.textContent = `${label}, ${describe(b)}`;
  }

  async function list(b) {
    const { r0, r1, c0, c1 } = bounds(b);
    const width = current.heatmap.shape[1];
    const flat = [];
    for (let r = r0; r < r1 && flat.length < LISTED; r++) {
      for (let c = c0; c < c1 && flat.length < LISTED; c++) flat.push(r * width + c);
    }
    const total = (r1 - r0) * (c1 - c0);
    const mine = ++asked;
    const at = where?.();
    if (!at) {
      // a notebook's trace keeps each big tensor's summary, not its elements
      elements.textContent = "The exact elements are not kept: the summary is what a trace holds.";
      return;
    }
    const values = new Map();
    try {
      const first = flat[0];
      const last = flat[flat.length - 1] + 1;
      for (let start = first; start < last; start += PAGE) {
        const query = { store: at.store, name: at.name, start, stop: Math.min(last, start + PAGE) };
        if (at.key) query.key = at.key;
        const page = await api.tensor(at.id, query);
        if (page.values === null) return; // .grad became None meanwhile: the repaint says so
        page.values.forEach((v, i) => values.set(page.start + i, v));
      }
    } catch (error) {
      if (mine === asked) elements.textContent = error.message;
      return;
    }
    if (mine !== asked || open !== b) return;
    const head = document.createElement("div");
    head.className = "sumhead";
    head.textContent = `${label}, ${describe(b)}` +
      (total > flat.length ? ` (the first ${flat.length} of ${total} elements)` : "");
    const spans = flat.map((i) => {
      const v = values.get(i);
      const s = document.createElement("span");
      s.className = "value";
      s.dataset.index = unravel(i, current.shape).join(",");
      s.title = `[${s.dataset.index}] = ${exactTitle(v, dtype)}`;
      s.textContent = short(v, dtype);
      return s;
    });
    elements.replaceChildren(head, ...spans);
  }

  function choose(b) {
    open = b;
    show(b);
    list(b);
  }

  map.addEventListener("mouseover", (e) => {
    if (e.target.dataset.b) show(Number(e.target.dataset.b));
  });
  map.addEventListener("click", (e) => {
    if (e.target.dataset.b) choose(Number(e.target.dataset.b));
  });
  map.addEventListener("focus", () => show(focus));
  map.addEventListener("keydown", (e) => {
    const cols = current.heatmap.cols.length;
    const moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols };
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      e.stopPropagation();
      choose(focus);
      return;
    }
    if (!(e.key in moves)) return;
    e.preventDefault();
    e.stopPropagation(); // arrows move inside the map, not the stepper
    show(Math.max(0, Math.min(cellEls.length - 1, focus + moves[e.key])));
  });

  return function render(summary, previous) {
    current = summary;
    const h = summary.heatmap;
    const n = h.rows.length * h.cols.length;
    const k = `${h.rows}/${h.cols}`;
    if (k !== grid) {
      map.style.gridTemplateColumns = `repeat(${h.cols.length}, var(--sumcell))`;
      cellEls = Array.from({ length: n }, (_, i) => {
        const c = document.createElement("span");
        c.className = "bcell";
        c.dataset.b = String(i);
        return c;
      });
      map.replaceChildren(...cellEls);
      grid = k;
      focus = Math.min(focus, n - 1);
      if (open >= n) open = -1;
    }
    const flat = h.cells.flat();
    const before = previous?.summary ? previous.heatmap.cells.flat() : null;
    let scale = 0;
    for (const v of flat) {
      const x = Math.abs(toNumber(v));
      if (Number.isFinite(x)) scale = Math.max(scale, x);
    }
    flat.forEach((v, i) => {
      cellEls[i].style.background = colour(v, scale);
      cellEls[i].classList.toggle("changed", Boolean(before && before.length === n && before[i] !== v));
    });
    map.dataset.scale = String(scale);
    map.setAttribute(
      "aria-label",
      `${label}, ${summary.shape.join(" by ")}, ${summary.numel} elements as ${h.rows.length} by ` +
        `${h.cols.length} block means, largest |mean| ${short(scale, "float64")}. ` +
        "Arrow keys pick a block, Enter lists its elements.",
    );
    stats.replaceChildren(
      ...[
        ["min", summary.min],
        ["max", summary.max],
        ["mean", summary.mean],
        ["std", summary.std],
        ["‖·‖", summary.norm],
      ].map(([word, v]) => {
        const s = document.createElement("span");
        s.dataset.stat = word === "‖·‖" ? "norm" : word;
        s.title = exact(v, "float64");
        s.textContent = `${word} ${short(v, "float64")}`;
        return s;
      }),
    );
    const counts = summary.histogram.counts;
    const most = Math.max(1, ...counts);
    hist.replaceChildren(
      ...counts.map((c, i) => {
        const bar = document.createElement("span");
        bar.style.height = `${(100 * c) / most}%`;
        bar.title = `${short(summary.histogram.edges[i], "float64")} to ${short(summary.histogram.edges[i + 1], "float64")}: ${c}`;
        return bar;
      }),
    );
    const edges = summary.histogram.edges;
    hist.setAttribute(
      "aria-label",
      `histogram from ${short(edges[0], "float64")} to ${short(edges[edges.length - 1], "float64")}: ` +
        counts.join(", ") + (summary.histogram.nonfinite ? `; ${summary.histogram.nonfinite} not finite` : ""),
    );
    if (open >= 0) {
      show(open);
      list(open); // the elements as they are now
    }
  };
}
