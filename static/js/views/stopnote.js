// A lecture on a lesson, as its followers see it (issue 29): the lesson's title, the stop the
// instructor stands at and its note (safe Markdown). The walk is the instructor's: no Next
// stop here; a stop that asks the class shows its question in the prediction panel.

import { markdown } from "./markdown.js";

export function createStopNote(root) {
  const title = root.querySelector("#stop-note-title");
  const where = root.querySelector("#stop-note-where");
  const note = root.querySelector("#stop-note-text");
  let shown = null;

  return function render(lesson) {
    root.hidden = !lesson;
    if (!lesson) return;
    const stop = lesson.stop === null ? null : lesson.stops[lesson.stop];
    const key = `${lesson.id}@${lesson.stop}`;
    if (key === shown) return;
    shown = key;
    title.textContent = lesson.title;
    where.textContent = stop
      ? `Stop ${lesson.stop + 1} of ${lesson.stops.length}: ${stop.title}`
      : `${lesson.stops.length} stops; the instructor walks to the next one.`;
    note.replaceChildren(...markdown(lesson.note ?? ""));
  };
}
