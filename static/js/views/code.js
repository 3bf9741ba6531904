// The code panel: the loop as the Python a student would write, in the program's order
// (the server sends each entry's code). Each line is a button, so clicking it or pressing
// Enter runs it out of order (how a student tries "backward twice"). A zero_grad dropped by
// "Skip zero_grad" stays visible, struck through, where it used to be.

import { entry } from "../catalogue.js";

// the lesson's "Skip zero_grad" drops the entry of this name (the toggle is named after it)
const ZERO_GRAD = "zero_grad";

/** Rows to show: the program, plus a struck-through zero_grad when the toggle dropped it. */
export function rows(session) {
  const out = session.program.map((entry, index) => ({
    entry, index, source: session.code?.[index] ?? entry, skipped: false,
  }));
  const zeroGrad = entry(ZERO_GRAD);
  const hasZero = session.program.some((e) => entry(e)?.method === zeroGrad.method);
  if (session.toggles.skip_zero_grad && !hasZero) {
    // where the default loop has it: right after the entry that writes the loss
    const writesLoss = (e) => entry(e)?.writes.includes("loss");
    const at = session.program.findIndex(writesLoss) + 1 || Math.min(2, out.length);
    out.splice(at, 0, { entry: ZERO_GRAD, index: -1, source: zeroGrad.python, skipped: true });
  }
  return out;
}

/** `decorate(item, row)` may add to each row's list item (the editor's tools). */
export function createCode(root, onLine, decorate = () => {}) {
  const list = document.createElement("div");
  list.className = "code";
  list.setAttribute("role", "list");
  const header = document.createElement("div");
  header.className = "code-head";
  header.innerHTML = '<span class="kw">for</span> X, y <span class="kw">in</span> loader:';
  root.replaceChildren(header, list);
  let shown = "";
  let buttons = [];
  let ranIndex = -1; // the row a click ran; -1 means "the one before the cursor"

  function build(items) {
    buttons = items.map((row) => {
      const item = document.createElement("div");
      item.setAttribute("role", "listitem");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "line";
      button.dataset.line = row.entry;
      button.dataset.index = String(row.index);
      if (row.row !== undefined) button.dataset.row = String(row.row);
      // compare mode's slot: what is (not) there, for a screen reader as well as the eye
      if (row.description) button.setAttribute("aria-description", row.description);
      const parts = ["marker", "src", "comment", "state"].map((name) => {
        const span = document.createElement(name === "src" ? "code" : "span");
        span.className = name;
        return span;
      });
      parts[0].setAttribute("aria-hidden", "true");
      parts[1].textContent = row.source;
      parts[2].textContent = entry(row.entry)?.comment ?? "";
      button.append(...parts);
      button.addEventListener("click", () => {
        ranIndex = row.index;
        onLine(row.entry, row.index);
      });
      item.append(button);
      decorate(item, row);
      return { row, button, item };
    });
    list.replaceChildren(...buttons.map((b) => b.item));
  }

  /**
   * `aligned` (compare mode): `{rows, next, ran}`, the rows lined up with the other loop's
   * (each with its `row` number, a slot `skipped` with a `description`) and the row numbers
   * to mark as next and just ran, slots included, so both sides mark the same row.
   */
  return function render(session, byClick = false, aligned = null) {
    const items = aligned?.rows ?? rows(session);
    const key = JSON.stringify(items);
    if (key !== shown) {
      build(items);
      shown = key;
    }
    const n = session.program.length;
    const last = session.last?.line;
    if (!byClick) ranIndex = -1;
    let ran = byClick ? ranIndex : (session.cursor - 1 + n) % n;
    if (last && session.program[ran] !== last) ran = session.program.indexOf(last);
    for (const { row, button } of buttons) {
      const next = aligned ? row.row === aligned.next : !row.skipped && row.index === session.cursor;
      const justRan = aligned
        ? row.row === aligned.ran && !row.skipped // a slot never runs
        : Boolean(last) && !row.skipped && row.index === ran;
      button.classList.toggle("skipped", row.skipped);
      button.classList.toggle("next", next);
      button.classList.toggle("ran", justRan);
      if (next) button.setAttribute("aria-current", "step");
      else button.removeAttribute("aria-current");
      // words, not only colour and arrows: read by screen readers and visible on the page
      const words = [next ? "next" : "", justRan ? "just ran" : "", row.skipped ? "skipped" : ""];
      button.querySelector(".state").textContent = words.filter(Boolean).join(", ");
      button.querySelector(".marker").textContent = next ? "▶" : justRan ? "✓" : "";
      button.title = row.description
        ? `${row.description} Click to run it here anyway.`
        : row.skipped
          ? "Skipped by the program (Skip zero_grad). Click to run it anyway."
          : `Run ${row.source} now`;
    }
    return { buttons, cursor: session.cursor, ran };
  };
}

/** Show (or clear) a refusal beside the line that caused it: the clicked one, or the next. */
const homes = new WeakMap(); // where each problem element sat in the page at first

export function showProblem(problem, panel, error, clicked) {
  if (!homes.has(problem)) homes.set(problem, problem.parentElement);
  if (!error) {
    problem.hidden = true;
    problem.textContent = "";
    return;
  }
  const line = error.line;
  const rowsShown = panel?.buttons ?? [];
  const at =
    rowsShown.find((b) => clicked !== undefined && b.row.index === clicked && b.row.entry === line) ??
    rowsShown.find((b) => b.row.index === panel.cursor && b.row.entry === line) ??
    rowsShown.find((b) => b.row.entry === line && !b.row.skipped) ??
    rowsShown.find((b) => b.row.entry === line);
  problem.replaceChildren();
  const head = document.createElement("strong");
  head.textContent = at ? `${at.row.source} failed:` : error.heading ?? "The server says:";
  const message = document.createElement("span");
  message.className = "message";
  message.textContent = ` ${error.message}`;
  problem.append(head, message);
  problem.hidden = false;
  // beside the failing line, so the words sit where the student's eye already is
  if (at) at.item.append(problem);
  else homes.get(problem).append(problem); // not inside a row a repaint may throw away
}
