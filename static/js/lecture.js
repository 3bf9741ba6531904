// The instructor's lecture panel: "Start a lecture" puts the join code in large type, the
// join link and its QR code (drawn here, by the vendored qrcode-generator: no outside
// service), how many follow, and during a question the live tally as bars. The stepper
// drives the session as usual; every change reaches the followers by itself (SSE).

import { api, ApiError } from "./api.js";
import { catalogue } from "./catalogue.js";
import { renderPoll } from "./views/poll.js";

const $ = (id) => document.getElementById(id);
const start = $("lecture-start");
const panel = $("lecture");
const TALLY_EVERY = 2000; // ms: the tally and follower count (the instructor's page only)
const VOTES_EVERY = 700; // ms: the live bars while the class predicts
let lectureOf = null; // the session id the lecture follows
let timer = null;

// the stepper's session (stepper.js loads it); the button waits for it
const current = () => window.loopStepper?.session ?? null;
const wait = setInterval(() => {
  if (current()) {
    start.disabled = false;
    clearInterval(wait);
  }
}, 100);
if (document.body.dataset.mode !== "stepper" || document.body.classList.contains("embed")) {
  start.hidden = true; // compare mode, self-study and slides have no lecture
}

function problem(error) {
  $("lecture-problem").hidden = !error;
  $("lecture-problem").textContent = error ? error.message : "";
}

function absolute(path) {
  return new URL(path, location.href).href;
}

// The QR library (51 KB) is fetched only when an instructor starts a lecture: every student
// loads this page too, and 300 of them share one classroom access point.
async function qr(url) {
  const { default: qrcode } = await import("../vendor/qrcode-generator/qrcode.js");
  const code = qrcode(0, "M");
  code.addData(url);
  code.make();
  $("lecture-qr").innerHTML = code.createSvgTag({ cellSize: 5, margin: 2, scalable: true });
}

// the tally's bars, like the QR code, load with the lecture panel, not with every page
let renderTally = null;
async function tally(t) {
  renderTally ??= (await import("./views/tally.js")).renderTally;
  renderTally($("tally"), t);
}

async function refresh() {
  if (!lectureOf) return;
  try {
    const t = await api.tally(lectureOf);
    $("lecture-followers").textContent = String(t.followers);
    await tally(t);
    $("quiz-reveal").disabled = !Object.keys(t.choices).length || t.revealed;
    await votes();
    // a new setup makes a new session; the lecture stays with the one it started on
    problem(current()?.id === lectureOf ? null : {
      message: "This page now drives a new session (the setup changed); the class still sees the old one. End the lecture and start it again.",
    });
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 409 || error.status === 404) stop("The lecture has ended.");
    else problem(error);
  }
}

/** The class's prediction: its bars (none asked yet: hidden). */
async function votes() {
  let view = null;
  try {
    view = await api.classCounts(lectureOf);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 409) throw error;
  }
  renderPoll($("poll"), view);
  $("predict-again").disabled = !view?.open || view.round >= 2;
  $("predict-ask").disabled = Boolean(view?.open);
  clearTimeout(fast);
  if (view?.open) fast = setTimeout(() => votes().catch(problem), VOTES_EVERY);
}
let fast = null;

function stop(text) {
  clearTimeout(fast);
  clearInterval(timer);
  timer = null;
  lectureOf = null;
  panel.hidden = true;
  start.textContent = "Start a lecture";
  start.setAttribute("aria-pressed", "false");
  if (text) start.title = text;
}

async function begin() {
  const session = current();
  try {
    const { code, url } = await api.startLecture(session.id);
    lectureOf = session.id;
    $("lecture-code").textContent = code;
    const link = absolute(url.replace(/^\//, ""));
    $("lecture-url").href = link;
    $("lecture-url").textContent = link;
    const join = absolute("join");
    $("lecture-join-url").href = join;
    $("lecture-join-url").textContent = join;
    $("lecture-report").href = api.reportUrl(session.id);
    await qr(link);
    await choices();
    panel.hidden = false;
    start.textContent = "Lecture running";
    start.setAttribute("aria-pressed", "true");
    document.body.dataset.lecture = code;
    await refresh();
    timer = setInterval(refresh, TALLY_EVERY);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    panel.hidden = false;
    problem(error);
  }
}

start.addEventListener("click", () => (lectureOf ? panel.scrollIntoView() : begin()));

$("lecture-end").addEventListener("click", async () => {
  if (!lectureOf) return;
  try {
    await api.endLecture(lectureOf);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
  }
  delete document.body.dataset.lecture;
  stop();
});

/** The question's choices, one checkbox per preset: labelled by its title, as the Loop menu
 * and the class see it; its id is the value sent. */
async function choices() {
  if ($("quiz-choices").childElementCount) return;
  const presets = catalogue().presets;
  $("quiz-choices").replaceChildren(...presets.map((p) => {
    const label = document.createElement("label");
    label.className = "check";
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = p.name;
    box.checked = ["correct", "skip_zero_grad", "step_first"].includes(p.name);
    label.append(box, ` ${p.title}`);
    return label;
  }));
}

$("quiz-ask").addEventListener("click", async () => {
  const choices = [...$("quiz-choices").querySelectorAll("input:checked")].map((b) => b.value);
  try {
    await tally(await api.ask(lectureOf, choices));
    $("quiz-reveal").disabled = false;
    problem(null);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    problem(error);
  }
});

$("quiz-reveal").addEventListener("click", async () => {
  try {
    await tally(await api.reveal(lectureOf));
    $("quiz-reveal").disabled = true;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    problem(error);
  }
});

$("predict-ask").addEventListener("click", async () => {
  try {
    renderPoll($("poll"), await api.askClass(lectureOf));
    problem(null);
    await votes();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    problem(error);
  }
});

$("predict-again").addEventListener("click", async () => {
  try {
    renderPoll($("poll"), await api.voteAgain(lectureOf));
    await votes();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    problem(error);
  }
});

// the instructor's next line reveals the answer (the server closes it): show it right away
for (const id of ["next", "run"]) {
  $(id)?.addEventListener("click", () => {
    if (lectureOf) setTimeout(() => votes().catch(problem), 400);
  });
}
