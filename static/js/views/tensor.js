// One tensor, two ways. A handful of numbers (the neuron) is printed in full; a bigger
// tensor (moons) is a heat map whose cells show the exact value on hover, on focus via the
// arrow keys, and on a tap (a phone has no hover), in a readout under the map; on a tapped
// .grad cell an Explain button follows, as a click explains it with a mouse. Cells are built
// once and then only recoloured, so repainting 700 cells stays well inside a frame.

import { cells, display, exact, exactTitle, sameValue, short, toNumber } from "../format.js";
import { createSummary } from "./summary.js";

const SMALL = 4; // up to this many numbers, print them

/** Diverging colour: blue below zero, orange above; `scale` is the largest |value|. */
export function heat(v, scale) {
  const x = toNumber(v);
  if (!Number.isFinite(x)) return "#000";
  const t = scale > 0 ? Math.min(1, Math.abs(x) / scale) : 0;
  const light = 97 - 52 * t;
  return x < 0 ? `hsl(212 70% ${light}%)` : `hsl(28 90% ${light}%)`;
}

function indexText(name, index) {
  return index.length ? `${name}[${index.join(", ")}]` : name;
}

/**
 * A view of one named tensor (or None). `render(value, previous)` repaints it; values that
 * differ from `previous` are marked changed (a Δ sign and an outline, not colour alone).
 * A tensor the server sends as a summary (more than 256 elements) is shown by summary.js,
 * which pages its elements from the tensor `where()` names ({id, store, name, key?}).
 */
export function createTensor(name, shape, dtype, what, where = null) {
  const size = shape.reduce((a, b) => a * b, 1);
  const el = document.createElement("div");
  el.className = "tensor";
  el.dataset.name = name;
  const label = document.createElement("div");
  label.className = "tname";
  label.innerHTML = `<code>${what === "grad" ? `${name}.grad` : name}</code> <span class="shape">${shape.length ? shape.join("×") : "scalar"}</span>`;
  const body = document.createElement("div");
  body.className = "tbody";
  el.append(label, body);
  const big = size > SMALL;
  let map = null;
  let readout = null;
  let cellEls = [];
  let current = [];
  let focusIndex = 0;
  let show = () => {};
  let shown = -1; // the cell in the readout, re-read after each repaint
  let summarized = null; // summary.js's render, once a summary came
  const cols = shape.length >= 2 ? shape[shape.length - 1] : Math.max(1, size);

  function setupMap() {
    map = document.createElement("div");
    map.className = "heatmap";
    map.tabIndex = 0;
    map.setAttribute("role", "img");
    map.style.gridTemplateColumns = `repeat(${cols}, var(--cell))`;
    map.style.setProperty("--cols", String(cols)); // a phone sizes the cells to fit the width
    readout = document.createElement("output");
    readout.className = "readout";
    // a finger has no hover: a touch screen says what works there
    readout.textContent = matchMedia("(pointer: coarse)").matches
      ? "tap a cell for its exact value" : "hover or focus for exact values";
    // a tap on a .grad cell shows its value, not a dialog at once: this button explains it
    const explain = document.createElement("button");
    explain.type = "button";
    explain.className = "small explain-cell";
    explain.hidden = true;
    for (let i = 0; i < size; i++) {
      const c = document.createElement("span");
      c.className = "cell";
      c.dataset.i = String(i);
      map.append(c);
      cellEls.push(c);
    }
    show = (i) => {
      const [v, index] = current[i] ?? [];
      if (v === undefined) return;
      shown = i;
      cellEls.forEach((c) => c.classList.remove("focus"));
      cellEls[i].classList.add("focus");
      const where = indexText(what === "grad" ? `${name}.grad` : name, index);
      readout.textContent = `${where} = ${exact(v, dtype)}`;
      explain.textContent = `Explain ${where}`;
    };
    map.addEventListener("mouseover", (e) => {
      if (e.target.dataset.i) show(Number(e.target.dataset.i));
    });
    map.addEventListener("click", (e) => {
      if (!e.target.dataset.i) return;
      focusIndex = Number(e.target.dataset.i); // the arrows go on from the tapped cell
      show(focusIndex);
      // only where a .grad can be explained (the stepper, not a follower or compare mode)
      if (what === "grad" && e.pointerType === "touch" && map.closest("[data-explain]")) {
        explain.hidden = false;
      }
    });
    map.addEventListener("focus", () => show(focusIndex));
    map.addEventListener("keydown", (e) => {
      const moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols };
      if (!(e.key in moves)) return;
      e.preventDefault();
      e.stopPropagation(); // arrows move inside the map, not the stepper
      focusIndex = Math.max(0, Math.min(size - 1, focusIndex + moves[e.key]));
      show(focusIndex);
    });
    body.append(map, readout, explain);
  }

  function render(value, previous) {
    if (value === null || value === undefined) {
      el.classList.add("none");
      body.hidden = true;
      label.querySelector(".none-word")?.remove();
      const none = document.createElement("span");
      none.className = "none-word value";
      none.textContent = "None";
      label.append(none);
      el.classList.toggle("changed-box", previous !== undefined && previous !== null);
      return;
    }
    el.classList.remove("none");
    label.querySelector(".none-word")?.remove();
    body.hidden = false;
    if (value.summary) {
      el.classList.toggle("changed-box", previous === null);
      summarized ??= createSummary(body, what === "grad" ? `${name}.grad` : name, dtype, where);
      summarized(value, previous);
      return;
    }
    current = cells(value);
    const before = previous == null ? null : cells(previous);
    const changed = current.map(([v], i) => !before || !sameValue(v, before[i]?.[0]));
    el.classList.toggle("changed-box", previous === null && changed.length > 0);
    if (!big) {
      body.replaceChildren(
        ...current.map(([v, index], i) => {
          const span = document.createElement("span");
          span.className = "value";
          span.dataset.index = index.join(",");
          span.title = exactTitle(v, dtype);
          span.textContent = display(v, dtype);
          if (before && changed[i]) span.classList.add("changed");
          return span;
        }),
      );
      return;
    }
    if (!map) setupMap();
    let scale = 0;
    for (const [v] of current) {
      const x = Math.abs(toNumber(v));
      if (Number.isFinite(x)) scale = Math.max(scale, x);
    }
    current.forEach(([v], i) => {
      const c = cellEls[i];
      c.style.background = heat(v, scale);
      c.classList.toggle("changed", Boolean(before && changed[i]));
    });
    const nChanged = before ? changed.filter(Boolean).length : 0;
    map.setAttribute(
      "aria-label",
      `${name}${what === "grad" ? ".grad" : ""}, ${shape.join(" by ")}, largest |value| ${short(scale, dtype)}` +
        (nChanged ? `, ${nChanged} changed` : "") + ". Arrow keys read single values.",
    );
    map.dataset.scale = String(scale);
    if (shown >= 0) show(shown);
  }

  return { el, render, big };
}
