// One side of compare mode: a loop's code, its parameters and .grad buffers, and its loss,
// built from the stepper's own views so the numbers read the same way on both sides.

import { display, exactTitle } from "../format.js";
import { createCode, showProblem } from "./code.js";
import { createGrads } from "./grads.js";
import { createParams } from "./params.js";

function part(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** `onLine(entry, index)` runs one line in this pane only (to try a line out of order). */
export function createPane(section, onLine) {
  const title = part("h2");
  const note = part("p", "preset-note");
  const code = part("div");
  const problem = part("p", "problem");
  problem.setAttribute("role", "alert");
  problem.hidden = true;
  const status = part("p", "iteration");
  const lossLine = part("p", "loss-value");
  const stores = part("div", "stores-mini");
  const sub = (label) => {
    const s = part("section");
    s.setAttribute("aria-label", label);
    s.dataset.store = label === "Parameters" ? "params" : "grad";
    const body = part("div", "body");
    s.append(part("h3", "", label === "Parameters" ? "Parameters θ" : "Gradients .grad"), body);
    stores.append(s);
    return body;
  };
  const params = createParams(sub("Parameters"));
  const grads = createGrads(sub("Gradients"));
  section.replaceChildren(title, note, code, problem, status, lossLine, stores);
  const codeView = createCode(code, onLine);
  let panel = null;
  let session = null;

  return {
    /** `aligned`: this side's rows lined up with the other loop's (lockstep.js `view`). */
    render(next, fresh, heading, explanation, aligned = null) {
      const previous = fresh ? null : session;
      session = next;
      title.textContent = heading;
      note.textContent = explanation;
      panel = codeView(session, false, aligned);
      params(session, previous);
      grads(session, previous);
      const dtype = session.params[0]?.dtype ?? "float64";
      status.textContent = aligned?.status ?? `iteration ${session.iteration}, next: ${session.next_line}`;
      lossLine.replaceChildren("loss = ");
      const v = part("span", "value", session.loss === null ? "None" : display(session.loss, dtype));
      if (session.loss !== null) v.title = exactTitle(session.loss, dtype);
      lossLine.append(v);
      lossLine.classList.toggle("none", session.loss === null);
    },
    problem(error, clicked) {
      showProblem(problem, panel, error, clicked);
    },
  };
}
