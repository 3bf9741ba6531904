// The followers' page: /join (type the code) and /l/{code} (the lecture, read-only, live).
// Every change the instructor makes arrives as one Server-Sent Event carrying the Session as
// followers see it, with only the loss points this page does not have yet and only the stores
// that changed since the event before (?changes=1; the first event is whole). EventSource
// reconnects by itself and sends Last-Event-ID, so a dropped connection or a server restart
// loses nothing. During a question the choices are buttons; the program is not even in the
// JSON until the instructor reveals it.

import { api, ApiError, BUSY_WORDS, onBusy, paths } from "./api.js";
import { restore } from "./changes.js";
import { storeId } from "./state.js";
import { createPrediction } from "./views/prediction.js";
import { createQuestion } from "./views/question.js";
import { createStopNote } from "./views/stopnote.js";
import { createWatch } from "./views/watch.js";

const $ = (id) => document.getElementById(id);
paths.root = document.body.dataset.root ?? "";
const code = document.body.dataset.code;

if (!code) {
  // /join: the code is typed; letters that look alike (0/O, 1/I) are never in a code
  const input = $("join-code");
  input.value = new URLSearchParams(location.search).get("code") ?? "";
  $("join-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const typed = input.value.trim().toUpperCase().replace(/[\s-]/g, "");
    try {
      await api.lecture(typed);
      location.assign(`l/${encodeURIComponent(typed)}`);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      $("join-error").hidden = false;
      $("join-error").textContent = error.status === 404
        ? `No lecture runs under ${typed}: check the code on the screen.`
        : error.message;
    }
  });
  document.body.dataset.ready = "1";
} else {
  follow();
}

function follow() {
  const render = createWatch($("watch"));
  const stopNote = createStopNote($("stop-note"));
  const status = $("follow-status");
  const badge = $("live-badge");
  const voterKey = `loop-stepper.voter.${code}`;
  const question = createQuestion($("question"), async (choice) => {
    const { voter } = await api.answer(code, choice, localStorage.getItem(voterKey));
    localStorage.setItem(voterKey, voter);
  });
  const prediction = createPrediction($("prediction"), async (choice) => {
    const { voter } = await api.predictVote(code, choice, localStorage.getItem(voterKey));
    localStorage.setItem(voterKey, voter);
  });
  let history = [];
  let session = null;
  let events = 0;

  function state(name, text) {
    badge.dataset.state = name;
    badge.textContent = text;
    status.textContent = text;
  }

  const source = new EventSource(api.eventsUrl(code));
  source.addEventListener("open", () => state("live", "Following — live"));
  source.addEventListener("session", (event) => {
    const { since, session: change } = JSON.parse(event.data);
    const next = restore(change, session); // the stores it left out are the event before's
    history = history.filter((p) => p.n < since).concat(next.history);
    next.history = history;
    session = next;
    render(session);
    question.render(session.quiz);
    stopNote(session.lesson ?? null);
    prediction.render(session.prediction ?? null);
    $("fork").disabled = Boolean(session.quiz && !session.quiz.revealed) || Boolean(session.prediction?.open);
    events += 1;
    document.body.dataset.events = String(events);
    document.body.dataset.ready = "1";
    state("live", "Following — live");
  });
  source.addEventListener("end", () => {
    source.close();
    state("ended", "The lecture has ended.");
  });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) {
      // a 404: the code is unknown or the lecture ended; EventSource gives up by itself
      state("ended", session ? "The lecture has ended." : `No lecture runs under ${code}.`);
      document.body.dataset.ready = "1";
    } else {
      state("reconnecting", "Reconnecting…");
    }
  });

  $("fork").addEventListener("click", async () => {
    const button = $("fork");
    if (button.dataset.forking) return; // one copy per click, however long the server takes
    button.dataset.forking = "1";
    const stop = onBusy((retry) => retry && (status.textContent = BUSY_WORDS));
    try {
      const mine = await api.fork(code);
      storeId(mine.id); // the stepper opens this tab's stored session
      location.assign(`${paths.root}?from=lecture`);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      status.textContent = error.message;
      delete button.dataset.forking;
    } finally {
      stop();
    }
  });
}
