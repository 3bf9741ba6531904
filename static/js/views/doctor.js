// The doctor on the page (issue 37): where the student's own loop (a program no preset is) has
// a silent bug, the region under the code names it — its id, the program line (1-based, as the
// code panel numbers it) and the iteration where the numbers show it, and the message, which
// for a bug that is a preset is that preset's explanation (the server says it from the one
// source). A preset's loop shows its explanation in the note already: the doctor stays hidden
// there and asks nothing. Hidden too while the loop has no diagnosis.
//
// Asked after each change of the session (a line run, a rewind, a program change): at most
// one request in flight, none when nothing changed since the last answer; an answer for a
// moment the page has left is dropped and the newest moment asked for instead.

import { ApiError } from "../api.js";

/** What the diagnoses depend on: the session, its moment, its program and its settings. */
function keyOf(s) {
  return JSON.stringify([s.id, s.moment, s.moments, s.program, s.lr, s.max_norm, s.iteration, s.cursor]);
}

/** One diagnosis: its id, where (with the line's Python: the code panel also shows a line
 * the program dropped, struck through, which the numbering skips), the message. */
function item(d, code) {
  const li = document.createElement("li");
  li.className = "diagnosis";
  li.dataset.bug = d.bug;
  const bug = document.createElement("code");
  bug.className = "bug";
  bug.textContent = d.bug;
  const where = document.createElement("span");
  where.className = "where";
  where.textContent = [d.line === null ? null : `line ${d.line}`, `iteration ${d.iteration}`]
    .filter(Boolean).join(" · ");
  const message = document.createElement("span");
  message.className = "message";
  message.textContent = d.message;
  li.append(bug, " ", where);
  const src = d.line === null ? undefined : code[d.line - 1];
  if (src !== undefined) {
    const python = document.createElement("code");
    python.className = "src";
    python.textContent = src;
    li.append(" · ", python);
  }
  li.append(" — ", message);
  return li;
}

/** `root`: the `#doctor` section (its list `.diagnoses`); `api.diagnoses(id)` the request.
 * Returns `render(session)`. */
export function createDoctor(root, api) {
  const list = root.querySelector(".diagnoses");
  let wanted = null; // the Session to answer for, or null: nothing to ask
  let shown = ""; // the key of what the region shows
  let busy = false;

  /** `at`: the moment the diagnoses are of (its data-moment: what the tests wait for). */
  function show(found, at, code = []) {
    root.hidden = found.length === 0;
    list.replaceChildren(...found.map((d) => item(d, code)));
    if (at === undefined) delete root.dataset.moment;
    else root.dataset.moment = String(at);
  }

  async function ask() {
    busy = true;
    try {
      while (wanted && keyOf(wanted) !== shown) {
        const s = wanted;
        let found;
        try {
          found = (await api.diagnoses(s.id)).diagnoses;
        } catch (error) {
          if (!(error instanceof ApiError)) throw error; // an expired session: the next line says so
          found = null;
        }
        if (wanted !== null && keyOf(wanted) === keyOf(s)) {
          if (found) show(found, s.moment, s.code);
          shown = keyOf(s); // a refusal is not asked again until the session changes
        }
      }
    } finally {
      busy = false;
    }
  }

  return function render(session) {
    if (session.preset !== null || !session.id) {
      wanted = null;
      shown = "";
      show([]);
      return;
    }
    wanted = session;
    if (!busy && keyOf(session) !== shown) ask();
  };
}
