// "Make a lesson" (issue 29): a lesson written from the live session. "Add a stop here" puts a
// stop at the session's moment; the setup, and every change of lr, max_norm or program made
// on the way, come from the server's draft of the session (GET …/lesson/draft), so the lesson
// replays what the author saw. "Check" runs every claim on a fresh session and shows each
// failure on its stop; "Save" gives the student link and the edit link; "Download" and "Open
// file" move the document as a .lesson.json file.

import { follow, stopForm, stopOf } from "./stopform.js";

const $ = (id) => document.getElementById(id);
const FORMAT = "loop-stepper-lesson/1";

const blank = () => ({ format: FORMAT, title: "", summary: "", setup: null, stops: [] });

/** A stop as the editor holds it: its own copy (its claims' text is added while typed). */
const editable = (stop) => ({ ...stop });

export function createAuthor({ api, session, announce }) {
  const els = {
    panel: $("author-panel"), title: $("a-title"), summary: $("a-summary"), add: $("a-add"),
    stops: $("a-stops"), check: $("a-check"), save: $("a-save"), download: $("a-download"),
    file: $("a-file"), drop: $("a-drop"), status: $("a-status"), error: $("a-error"),
    links: $("a-links"), student: $("a-student"), edit: $("a-edit"),
  };
  let doc = blank();
  let live = false; // the setup is the live session's (else a file's, kept as it is)
  let saved = null; // {id, token}: Save edits it
  let checked = []; // the last check, stop by stop

  const say = (words) => {
    els.status.textContent = words;
    announce(words);
  };
  function problem(words) {
    els.error.hidden = !words;
    els.error.textContent = words ?? "";
  }

  function draw(focusId) {
    els.title.value = doc.title;
    els.summary.value = doc.summary;
    const here = session()?.moment ?? null;
    els.stops.replaceChildren(...doc.stops.map((stop, i) => stopForm(stop, i, doc.stops.length, {
      redraw: draw, move, remove, expect, here: () => here,
    }, checked[i])));
    if (focusId) $(focusId)?.focus();
  }

  /** The session's draft: its setup (and changes) into the document; what it holds now. */
  async function drafted() {
    const s = session();
    const { lesson, here } = await api.lessonDraft(s.id);
    doc.setup = lesson.setup;
    if (!doc.title) doc.title = lesson.title;
    for (const change of lesson.stops) { // a change made on the way: on the stop at its moment
      const at = doc.stops.find((stop) => stop.at === change.at);
      if (at) at.change = change.change;
      else doc.stops.push(editable(change));
    }
    doc.stops.sort((a, b) => a.at - b.at);
    live = true;
    return here;
  }

  /** The document as it is sent: the live session's setup brought up to date first. */
  async function current() {
    if (live && session()) {
      const before = doc.stops.length;
      await drafted();
      if (doc.stops.length !== before) draw(); // a change made on the way: its stop shows
    }
    return { ...doc, stops: doc.stops.map(stopOf) };
  }

  async function guard(task) {
    problem(null);
    try {
      await task();
    } catch (error) {
      const detail = Array.isArray(error.detail) ? error.detail : null;
      problem(detail
        ? `The lesson is not valid: ${detail.map((d) => `${d.pointer ?? d.loc?.join("/")}: ${d.msg}`).join("; ")}`
        : error.message);
    }
  }

  async function addHere() {
    const here = await drafted();
    const index = doc.stops.findIndex((stop) => stop.at === here.at);
    if (index >= 0 && !doc.stops[index].change) {
      draw(`a-stop-${index}-title`);
      say(`Stop ${index + 1} is already at moment ${here.at}.`);
      return;
    }
    if (index < 0) {
      doc.stops.push({ at: here.at, title: `At moment ${here.at}`, note: "", question: null, vote: false });
    }
    doc.stops.sort((a, b) => a.at - b.at);
    checked = [];
    const at = doc.stops.findIndex((stop) => stop.at === here.at);
    draw(`a-stop-${at}-title`);
    say(`Stop ${at + 1} added at moment ${here.at}.`);
  }

  function move(index, by) { // title, note, question and vote move; the moments and claims stay
    const [a, b] = [doc.stops[index], doc.stops[index + by]];
    for (const key of ["title", "note", "question", "vote"]) [a[key], b[key]] = [b[key], a[key]];
    checked = [];
    draw(`a-stop-${index + by}-title`);
    say(`Stop ${index + 1} moved ${by < 0 ? "up" : "down"}.`);
  }

  function remove(index) {
    doc.stops.splice(index, 1);
    checked = [];
    draw();
    els.add.focus();
    say(`Stop ${index + 1} deleted.`);
  }

  async function expect(index) {
    await guard(async () => {
      const here = await drafted();
      const stop = doc.stops.find((s) => s.at === here.at);
      if (!stop) return;
      stop.expect = here.expect;
      delete stop.expectText;
      draw(`a-stop-${doc.stops.indexOf(stop)}-expect`);
      say(`Stop ${index + 1} expects the current values.`);
    });
  }

  async function check() {
    const report = await api.checkLesson(await current());
    checked = report.stops;
    draw();
    const failing = checked.filter((s) => !s.holds).length;
    say(failing ? `${failing} of ${checked.length} stops do not hold.` : `All ${checked.length} stops hold.`);
  }

  async function save() {
    const sent = await current();
    if (saved) {
      await api.saveLesson(sent, saved);
    } else {
      const made = await api.saveLesson(sent);
      saved = { id: made.id, token: made.edit_token };
    }
    const student = new URL(`./?lesson=${encodeURIComponent(saved.id)}`, location.href);
    els.student.value = student.href;
    els.edit.value = `${student.href}#edit=${encodeURIComponent(saved.token)}`;
    els.links.hidden = false;
    say("Saved. The student link opens the lesson; keep the edit link to change it.");
  }

  async function download() {
    const sent = await current();
    const blob = new Blob([`${JSON.stringify(sent, null, 2)}\n`], { type: "application/json" });
    const link = Object.assign(document.createElement("a"), {
      href: URL.createObjectURL(blob),
      // named as GET /api/lessons/{id}/file names it
      download: `${sent.title.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 80) || "lesson"}.lesson.json`,
    });
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    say("Downloaded.");
  }

  /** A lesson (a file's text, or a saved one with its token) in the editor, then checked. */
  async function load(parsed, token = null) {
    doc = { ...blank(), ...parsed, stops: (parsed.stops ?? []).map(editable) };
    live = false;
    saved = token ? token : null;
    checked = [];
    els.links.hidden = true;
    els.panel.open = true;
    draw();
    await check();
  }

  async function open(file) {
    if (!file) return;
    await guard(async () => {
      let parsed;
      try {
        parsed = JSON.parse(await file.text());
      } catch {
        throw new Error(`${file.name} is not a lesson file (not JSON).`);
      }
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
        throw new Error(`${file.name} is not a lesson file.`);
      }
      await load(parsed);
      say(`Opened ${file.name}. ${els.status.textContent}`);
    });
  }

  els.title.addEventListener("input", () => { doc.title = els.title.value; });
  els.summary.addEventListener("input", () => { doc.summary = els.summary.value; });
  els.add.addEventListener("click", () => guard(addHere));
  els.check.addEventListener("click", () => guard(check));
  els.save.addEventListener("click", () => guard(save));
  els.download.addEventListener("click", () => guard(download));
  els.file.addEventListener("change", () => open(els.file.files[0]));
  els.drop.addEventListener("dragover", (event) => event.preventDefault());
  els.drop.addEventListener("drop", (event) => {
    event.preventDefault();
    open(event.dataTransfer.files[0]);
  });

  return {
    /** A new answer: the buttons that depend on the session's moment follow it. */
    render(s) {
      for (const fill of els.stops.querySelectorAll(".a-fill")) follow(fill, s.moment);
    },
    /** The edit link (`?lesson=id#edit=token`): the saved lesson in the editor. */
    async edit(id, token) {
      await guard(async () => {
        await load(await api.lesson(id), { id, token });
        say(`Editing the saved lesson: Save changes it. ${els.status.textContent}`);
      });
    },
  };
}
