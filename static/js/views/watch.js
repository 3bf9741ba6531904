// A Session shown read-only: the loop (or, during a question, a note that it is hidden) and
// the stores, built from the stepper's own views so followers read the same numbers the same
// way. Used by the followers' page and the self-study question.

import { createCode } from "./code.js";
import { createStores } from "./stores.js";

const MARKUP = `
  <div class="left">
    <section aria-label="Code" class="panel code-panel">
      <h2>The loop <span class="iteration"></span></h2>
      <div class="w-code"></div>
      <p class="w-hidden" hidden>The loop is hidden until the question is revealed: watch the
        numbers and decide which bug it is.</p>
    </section>
  </div>
  <div class="stores"></div>`;

/** Fill `root` (a main.layout) and return render(session): one repaint per Session. */
export function createWatch(root) {
  root.innerHTML = MARKUP;
  const $ = (cls) => root.querySelector(`.${cls}`);
  const code = $("w-code");
  let codeView = null; // built again after a question: hidden, the loop leaves the DOM too
  const stores = createStores(root.querySelector(".stores"));
  let previous = null;

  return function render(session) {
    const shown = Array.isArray(session.program);
    code.hidden = !shown;
    $("w-hidden").hidden = shown;
    if (!shown) {
      code.replaceChildren();
      codeView = null;
    } else {
      codeView ??= createCode(code, () => {});
      codeView(session, false);
      // read-only: the lines show where the loop is, but run nothing
      for (const button of code.querySelectorAll("button")) button.disabled = true;
    }
    $("iteration").textContent = `iteration ${session.iteration}, next: ${session.next_line}`;
    stores(session, previous);
    previous = session;
  };
}
