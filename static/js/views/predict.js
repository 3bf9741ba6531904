// Predict first (issue 17): with the switch on (key p, ?predict=1) Next line asks what the line
// will do instead of running it; answering runs it (the server runs it exactly as Next would),
// marks the answer right or wrong with the explanation and, for a wrong one, what it believed,
// and keeps a running score with the lines most often got wrong. A lesson's stop whose
// question is `auto` asks the same question in the stop's panel, the switch on or off.

import { ApiError } from "../api.js";

const $ = (id) => document.getElementById(id);

/** "Right.", or the true choices in the student's words: "Not quite: the answer is “-23.5”.",
 * "… the answers are “the autograd graph” and “.grad”.", "… none of them is true." */
function verdictHead(said) {
  if (said.correct) return "Right.";
  const right = said.choices.filter((c) => said.answer.includes(c.id)).map((c) => `“${c.text}”`);
  if (!right.length) return "Not quite: none of them is true.";
  if (right.length === 1) return `Not quite: the answer is ${right[0]}.`;
  return `Not quite: the answers are ${right.slice(0, -1).join(", ")} and ${right.at(-1)}.`;
}

/** `session()` is the current Session; `enqueue` the request queue; `render` paints a Session;
 * `failed(error)` shows a refusal as a 409 from Next would be shown; `announce` speaks. */
export function createPredict({ api, session, enqueue, render, failed, announce }) {
  const box = $("predict-first");
  const section = $("predict");
  const prompt = $("predict-prompt");
  const choices = $("predict-choices");
  const submit = $("predict-answer");
  const verdict = $("predict-verdict");
  const score = $("predict-score");
  // where the panel lives under the loop; a lesson's auto stop borrows it (`atStop`)
  const home = { parent: section.parentElement, before: section.nextSibling };
  let question = null;
  let atStop = false;
  let answering = false; // the Session of an answer is being painted

  function setUrl(on) {
    const q = new URLSearchParams(location.search);
    if (on) q.set("predict", "1");
    else q.delete("predict");
    history.replaceState(null, "", `${location.pathname}?${q}`);
  }

  function set(on) {
    box.checked = on;
    section.hidden = !on && !atStop; // a lesson's stop asks whatever the switch says
    setUrl(on);
    if (!on && !atStop) question = null;
    // switched on with a session there: the panel asks at once rather than showing a lone
    // Answer button until the next Next line
    else if (session()) ask({ quiet: true });
  }

  function build(q) {
    const kind = q.multiple ? "checkbox" : "radio";
    choices.replaceChildren(...q.choices.map((c, i) => {
      const label = document.createElement("label");
      label.className = "choice";
      const input = document.createElement("input");
      Object.assign(input, { type: kind, name: "predict-choice", value: c.id });
      if (i === 0 && !q.multiple) input.checked = true;
      label.append(input, ` ${c.text}`);
      return label;
    }));
  }

  /** Show the question about the line at the cursor. `quiet`: asked by the page itself (the
   * session just opened, the switch just turned on), so the focus and the keys stay where
   * they are: n then asks the same question again and moves into its choices. */
  async function ask({ quiet = false } = {}) {
    return enqueue(async () => {
      try {
        question = await api.question(session().id);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        failed(error);
        return;
      }
      prompt.textContent = question.prompt;
      build(question);
      verdict.textContent = "";
      submit.disabled = false;
      section.hidden = false;
      if (quiet) return;
      choices.querySelector("input")?.focus();
      announce(question.prompt);
    });
  }

  async function tally(id) {
    const s = await api.score(id);
    const wrong = Object.entries(s.by_line)
      .filter(([, t]) => t.asked > t.correct)
      .map(([line, t]) => `${line} ${t.asked - t.correct} of ${t.asked}`);
    score.textContent = `Score: ${s.correct} of ${s.asked}` +
      (wrong.length ? `. Wrong most on: ${wrong.join(", ")}.` : ".");
    return s;
  }

  async function answer() {
    if (!question) return;
    const picked = [...choices.querySelectorAll("input:checked")].map((i) => i.value);
    const choice = question.multiple ? picked : picked[0];
    submit.disabled = true;
    return enqueue(async () => {
      const id = session().id;
      const said = await api.predict(id, choice);
      answering = true;
      try {
        if (said.session) render(said.session);
        else failed({ status: 409, message: said.error.detail, line: said.error.line });
      } finally {
        answering = false;
      }
      const mine = said.choices.filter((c) => picked.includes(c.id) && c.misconception);
      const s = await tally(id);
      // the verdict last: once it shows, the answer is done and n asks the next question
      verdict.textContent = [verdictHead(said), said.explanation,
        ...mine.map((c) => `You chose “${c.text}”: ${c.misconception}.`)].join(" ");
      question = null;
      // on a phone the question is a sheet on the bottom bar that scrolls by itself: bring the
      // verdict up in it (elsewhere the panel does not scroll, and this does nothing)
      section.scrollTop = Math.max(0, verdict.offsetTop - 8);
      // the keys (n for the next question) work again: the choices no longer hold the focus
      if (choices.contains(document.activeElement)) $("next").focus();
      announce(`${verdict.textContent} Score ${s.correct} of ${s.asked}.`);
    });
  }

  box.addEventListener("change", () => set(box.checked));
  submit.addEventListener("click", answer);
  choices.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      answer();
    }
  });
  /** A lesson's stop whose question is auto: the question in `slot` (the stop's panel), asked
   * at once without taking the focus, its prompt said; Next line then moves into its choices
   * as with the switch on. `stop(null)`: the panel back under the loop, as the switch says. */
  function stop(slot) {
    if (slot) {
      atStop = true;
      slot.append(section);
      section.hidden = false;
      return ask({ quiet: true }).then(() => question && announce(question.prompt));
    }
    if (!atStop) return undefined;
    atStop = false;
    home.parent.insertBefore(section, home.before);
    section.hidden = !box.checked;
    if (!box.checked) question = null;
    return undefined;
  }

  return {
    get on() {
      return box.checked;
    },
    /** The question is asked here without the switch: a lesson's auto stop. */
    get atStop() {
      return atStop;
    },
    /** The Session being painted is an answer's (its line just ran): its verdict follows. */
    get answering() {
      return answering;
    },
    stop,
    set,
    toggle: () => set(!box.checked),
    /** Next line with the switch on: ask first (asking twice gives the same question). */
    next: () => ask(),
    /** The session is ready: with the switch on, its first question shows at once. */
    ready: () => box.checked && ask({ quiet: true }),
  };
}
