// The self-study question (`/?quiz=1`): a session running a random bug, its program hidden
// (not even in the JSON). The student steps it, watches the stores, picks the bug; the
// answer reveals the program and explains it.

import { api, ApiError } from "./api.js";
import { presetTitle } from "./catalogue.js";
import { createQuestion } from "./views/question.js";
import { createWatch } from "./views/watch.js";

const $ = (id) => document.getElementById(id);
const bar = document.createElement("div");
bar.className = "controls quiz-bar";
bar.innerHTML = `
  <button type="button" id="q-next">Next line</button>
  <button type="button" id="q-iteration">Run 1 iteration</button>
  <button type="button" id="q-reset">Reset</button>
  <button type="button" id="q-new">Another question</button>
  <span id="q-status" class="status" role="status">Loading…</span>`;
const section = document.createElement("section");
section.className = "panel question";
section.setAttribute("aria-label", "Question");
section.innerHTML = `<h2>Which loop is this?</h2>
  <div class="choices" role="group" aria-label="Choices"></div>
  <p class="verdict" role="status"></p>`;
// the stepper's markup goes (its ids would clash); the watch and the question take its place
$("controls").replaceWith(bar, section);
const main = document.querySelector("main.layout");
main.setAttribute("aria-busy", "false");
const render = createWatch(main);
let session = null;
let queue = Promise.resolve();

const question = createQuestion(section, async (choice) => {
  const result = await api.selfAnswer(session.id, choice);
  question.chose(choice);
  show(await api.get(session.id));
  $("q-status").textContent = result.correct ? "Right!" : `Not quite: it was ${presetTitle(result.preset)}.`;
});

function show(next) {
  session = next;
  render(session);
  question.render(session.quiz, session.id);
  document.body.dataset.ready = "1";
}

function act(request) {
  queue = queue.then(async () => {
    try {
      show(await request());
      $("q-status").textContent = "";
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      $("q-status").textContent = error.line ? `${error.line} failed: ${error.message}` : error.message;
      if (error.status === 409) show(await api.get(session.id));
    }
  });
}

$("q-next").addEventListener("click", () => act(() => api.next(session.id)));
$("q-iteration").addEventListener("click", () => act(() => api.run(session.id, 1)));
$("q-reset").addEventListener("click", () => act(() => api.reset(session.id)));
$("q-new").addEventListener("click", () => act(() => api.createQuiz()));
act(() => api.createQuiz());
