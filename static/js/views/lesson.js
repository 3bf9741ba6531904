// A lesson's walk beside the stepper (issue 29): the lesson's title, its stops (where the
// session stands among them, each a button to its moment), the note and the question of the
// stop it stands at, "Next stop" (and the key s), and the score of its questions. Shown only
// for a session on a lesson. A stop whose question is `auto` asks predict first's question
// right there (issue 40): `ask(slot)` lends predict.js's panel to the stop, `ask(null)` gives
// it back; `answering()` says the Session painted is that answer's, so its verdict stays.

import { markdown } from "./markdown.js";

const $ = (id) => document.getElementById(id);

export function createLesson({ api, session, nextStop, goTo, ask, answering, announce }) {
  const els = {
    panel: $("lesson-panel"), title: $("lesson-title"), stops: $("lesson-stops"),
    note: $("lesson-note"), question: $("lesson-question"), ask: $("lesson-ask"), next: $("lesson-next"),
    score: $("lesson-score"), slider: $("timeline"), marks: $("timeline-stops"),
  };
  let shown = null; // "<session id>@<moment>" drawn last

  els.next.addEventListener("click", () => nextStop());
  document.addEventListener("keydown", (event) => {
    const typing = event.target.closest?.("input, textarea, select, [contenteditable]");
    if (event.key === "s" && !typing && !event.ctrlKey && !event.metaKey && !els.panel.hidden) {
      event.preventDefault();
      nextStop();
    }
  });

  async function refreshScore(id) {
    try {
      const s = await api.lessonScore(id);
      els.score.textContent = `Score: ${s.correct} of ${s.asked} questions right (${s.answered} answered).`;
    } catch {
      els.score.textContent = "";
    }
  }

  function question(s, index, q) {
    els.question.replaceChildren();
    // auto: predict first's question about the next line, asked here; once its answer ran
    // the line, the question and its verdict stay (above the next stop's note: "answered")
    // until the walk moves on
    const kept = q !== "auto" && answering() && els.ask.firstElementChild !== null;
    els.ask.classList.toggle("answered", kept);
    if (q === "auto") ask(els.ask);
    else if (!kept) ask(null);
    if (!q || q === "auto") return;
    const box = document.createElement("fieldset");
    const legend = document.createElement("legend");
    legend.append(...markdown(q.prompt).flatMap((p) => [...p.childNodes]));
    box.append(legend);
    for (const c of q.choices) {
      const id = `lesson-choice-${c.id}`;
      const input = Object.assign(document.createElement("input"), {
        type: q.multiple ? "checkbox" : "radio", name: "lesson-choice", value: c.id, id,
      });
      const label = document.createElement("label");
      label.htmlFor = id;
      label.append(...markdown(c.text).flatMap((p) => [...p.childNodes]));
      const row = document.createElement("p");
      row.append(input, " ", label);
      box.append(row);
    }
    const send = Object.assign(document.createElement("button"), { type: "button", textContent: "Answer" });
    const verdict = Object.assign(document.createElement("p"), { className: "verdict" });
    verdict.setAttribute("role", "status");
    send.addEventListener("click", async () => {
      const choices = [...box.querySelectorAll("input:checked")].map((i) => i.value);
      if (!choices.length) return;
      const a = await api.lessonAnswer(s.id, index, choices);
      const said = Object.values(a.feedback).filter(Boolean).join(" ");
      verdict.textContent = `${a.correct ? "Right." : "Not quite."} ${said}`.trim();
      announce(verdict.textContent);
      refreshScore(s.id);
    });
    box.append(send, verdict);
    els.question.append(box);
  }

  /** The stops, one a row, each a button to its moment: a button, not a link, since it moves
   * this session (it opens no page). Built again only when the stops change, so the one
   * just pressed keeps the focus; the stop the session stands at is `aria-current` (its row,
   * as the page has always marked it). */
  function drawStops(lesson) {
    const key = JSON.stringify(lesson.stops);
    if (els.stops.dataset.stops !== key) {
      els.stops.dataset.stops = key;
      els.stops.replaceChildren(...lesson.stops.map((stop) => {
        const li = document.createElement("li");
        const go = Object.assign(document.createElement("button"), {
          type: "button", className: "stop-go", textContent: `${stop.title} (moment ${stop.at})`,
        });
        go.addEventListener("click", () => goTo(stop.at));
        li.append(go);
        return li;
      }));
    }
    [...els.stops.children].forEach((li, i) => {
      if (i === lesson.stop) li.setAttribute("aria-current", "step");
      else li.removeAttribute("aria-current");
    });
  }

  /** The stops as tick marks on the timeline slider (those it reaches: the moments run). */
  function marks(lesson) {
    const shownAt = [...els.marks.options].map((o) => o.value).join();
    const stops = lesson?.stops ?? [];
    if (shownAt === stops.map((s) => String(s.at)).join()) return;
    els.marks.replaceChildren(...stops.map((stop) => Object.assign(document.createElement("option"), {
      value: String(stop.at), label: stop.title,
    })));
    if (stops.length) els.slider.setAttribute("list", "timeline-stops");
    else els.slider.removeAttribute("list");
  }

  return function render(s) {
    const lesson = s.lesson;
    els.panel.hidden = !lesson;
    document.body.classList.toggle("on-lesson", Boolean(lesson));
    marks(lesson);
    if (!lesson) {
      shown = null;
      ask(null);
      return;
    }
    const key = `${s.id}@${s.moment}`;
    if (key === shown) return;
    shown = key;
    els.title.textContent = lesson.title;
    drawStops(lesson);
    const last = lesson.stops.at(-1)?.at ?? 0;
    els.next.disabled = s.moment >= last;
    els.note.replaceChildren(...markdown(lesson.note ?? (lesson.stop === null
      ? "Next stop (or the key s) runs the lines to the lesson's next stop." : "")));
    question(s, lesson.stop, lesson.question);
    refreshScore(s.id);
  };
}
