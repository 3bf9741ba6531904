// A question's live tally as a bar chart: one bar per choice, its count beside it; once
// revealed the right one is marked. Each choice is a preset, named by its title.

import { presetTitle } from "../catalogue.js";

export function renderTally(root, tally) {
  const entries = Object.entries(tally.choices);
  root.hidden = !entries.length;
  const most = Math.max(1, ...entries.map(([, n]) => n));
  const rows = entries.map(([name, n]) => {
    const row = document.createElement("div");
    row.className = "tally-row";
    row.dataset.choice = name;
    row.classList.toggle("right", tally.revealed && name === tally.answer);
    const label = document.createElement("span");
    label.className = "tally-name";
    label.textContent = presetTitle(name);
    const bar = document.createElement("span");
    bar.className = "tally-bar";
    // a width attribute-free bar: an SVG rect (no inline styles under the CSP)
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 100 10");
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("aria-hidden", "true");
    const rect = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    rect.setAttribute("width", String((100 * n) / most));
    rect.setAttribute("height", "10");
    svg.append(rect);
    bar.append(svg);
    const count = document.createElement("span");
    count.className = "tally-count";
    count.textContent = String(n);
    row.append(label, bar, count);
    return row;
  });
  const total = document.createElement("p");
  total.className = "tally-total";
  const answer = tally.answer ? presetTitle(tally.answer) : "none";
  total.textContent = `${tally.answers} answered` + (tally.revealed ? ` — answer: ${answer}` : "");
  root.replaceChildren(...rows, total);
}
