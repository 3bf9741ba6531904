// The stepper's session lifecycle: the views wired to their actions, a new session when the
// setup changes, presenter mode, and the first session (from the URL, a shared moment or the
// one this tab already had). Painting is paint.js, the request queue and Run actions.js, the
// keys keys.js.

import { createActions } from "./actions.js";
import { api, ApiError, BUSY_WORDS, onBusy } from "./api.js";
import { catalogue } from "./catalogue.js";
import { installKeys } from "./keys.js";
import { applyLtiRole } from "./lti-role.js";
import { lazyView } from "./lazy.js";
import { createPainter, current, travelled } from "./paint.js";
import {
  openSession, presetProgram, readUrl, scaled, setupOf, SPEC_KEYS, storedId, storeId, writeUrl,
} from "./state.js";
import { createCode, showProblem } from "./views/code.js";
import { createAnnouncer, createControls, describe } from "./views/controls.js";
import { createEditor } from "./views/editor.js";
import { createExtras } from "./views/extras.js";
import { installFolds } from "./views/folds.js";
import { createGraph } from "./views/graph.js";
import { createGrads } from "./views/grads.js";
import { createAuthor } from "./views/author.js";
import { createGallery } from "./views/gallery.js";
import { createLesson } from "./views/lesson.js";
import { createLoss } from "./views/loss.js";
import { createOptState } from "./views/optstate.js";
import { createOutput } from "./views/output.js";
import { createParams } from "./views/params.js";
import { createBuild } from "./views/build.js";
import { createSetup } from "./views/setup.js";
import { createShare } from "./views/share.js";
import { createTimeline } from "./views/timeline.js";
import { createExplain } from "./views/explain.js";
import { createPredict } from "./views/predict.js";

const $ = (id) => document.getElementById(id);
const session = () => current.session;
const announce = createAnnouncer($("announcer"));

const editor = createEditor((rewrite) => actions.perform(
  () => api.patch(session().id, { program: rewrite([...session().program]) }), true, "Program changed."));
const views = {
  code: createCode($("code"), (entry, index) =>
    actions.perform(() => api.line(session().id, entry), true, undefined, false, index), editor.decorate),
  params: createParams($("params")),
  grads: createGrads($("grads")),
  graph: createGraph($("graph")),
  loss: createLoss($("loss"), (s) => s.params[0]?.dtype ?? "float64"),
  optstate: createOptState(document.querySelector("[data-store=optimizer_state]"), $("optstate")),
  extras: createExtras($("extras"), $("extras-body")),
  amp: lazyView((s) => Boolean(s.amp),
    () => import("./views/amp.js").then((m) => m.createAmp($("amp-panel"), $("amp-body")))),
};
const travel = async (request) => {
  const s = await request;
  travelled.add(s);
  return s;
};
const timeline = createTimeline({
  back: () => goBack(),
  rewind: (to) => {
    actions.pause();
    // no announcement per position: the slider's own value text says where it is
    return actions.perform(() => travel(api.rewind(session().id, to)), false);
  },
  list: (id) => api.timeline(id),
});
const share = createShare({
  snapshot: () => actions.enqueue(async () => {
    const s = session();
    try {
      const taken = await api.snapshot(s.id);
      return { ...taken, moment: s.moment, at: `${s.id}@${s.moment}` };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      await actions.recover(error);
      actions.complain(error);
      return null;
    }
  }),
  announce: (text) => announce(text),
}, api.scriptUrl);

/** A stop's button: a moment run so far is rewound to; one ahead is walked to by Next stop
 * from the newest moment, so no moment (and no prediction made there) is dropped. */
async function toStop(at) {
  let s = session();
  if (at <= s.moments) return travel(api.rewind(s.id, at));
  if (s.moment < s.moments) s = await travel(api.rewind(s.id, s.moments));
  while (s.moment < at) s = await api.nextStop(s.id);
  return s;
}

function goBack() {
  if (!timeline.canGoBack()) return;
  actions.pause();
  actions.perform(() => travel(api.back(session().id)), true,
    (s) => `Back to ${timeline.label(s.moment)}. ${describe(s)}`);
}

/** A new session (the setup changed): same loop where it still fits, the old one freed. */
function newSession(setup, sentence) {
  actions.pause();
  const old = session();
  actions.perform(async () => {
    // the same loop where it still fits (the same accumulation), else the toggles' loop
    const { skip_zero_grad, step_first, ...rest } = setup;
    // (and the same GradScaler or none: its loop ends with scaler.update())
    const scaler = setup.amp === "float16" && setup.grad_scaler !== false;
    const keep = (setup.accumulate ?? 1) === old.accumulate && scaler === scaled(old);
    const fresh = await api.create(keep ? { ...rest, program: old.program } : setup);
    storeId(fresh.id);
    api.remove(old.id).catch(() => {}); // free the server's memory; an expired one is fine
    return fresh;
  }, true, sentence, true);
}
createBuild({ api, create: (body) => newSession(body, "New session on your own model.") });
const setup = createSetup((changes) =>
  newSession({ ...setupOf(session()), lr: session().lr, ...changes }, "New session with the new setup."));
/** Next line: run it, or with Predict first on (or at a lesson's auto stop), ask about it first. */
const nextLine = () => (predict.on || predict.atStop
  ? predict.next() : actions.perform(() => api.next(session().id), true));
const controls = createControls({
  next: () => nextLine(),
  toggleRun: () => actions.toggleRun(),
  reset: () => {
    actions.pause();
    actions.perform(() => api.reset(session().id), true, "Reset: initial parameters, iteration 0.");
  },
  scenario: (name) => {
    // the new scenario's default lr; accumulation only if it divides the new batch
    const { curvature, theta_star, dropout, batchnorm, softmax_before_loss, dtype, ...carried } =
      setupOf(session());
    for (const key of SPEC_KEYS) delete carried[key]; // a scenario in place of your own model
    if (name === "moons") Object.assign(carried, { dropout, batchnorm, softmax_before_loss, dtype });
    if (name === "moons" && carried.amp) carried.dtype = "float32"; // autocast: float32 models
    if (name === "parabola") { // float64: autocast does not apply
      delete carried.amp;
      delete carried.grad_scaler;
    }
    const ks = current.scenarios?.find((s) => s.name === name)?.accumulate ?? [1];
    if (!ks.includes(carried.accumulate)) carried.accumulate = 1;
    newSession({ ...carried, scenario: name }, `New ${name} session.`);
  },
  runIterations: (n) =>
    actions.perform(() => api.run(session().id, n), true, undefined, false, undefined, true),
  patch: (changes) => actions.perform(() => api.patch(session().id, changes), true, "Setup changed."),
  togglePresent: () => setPresent(!current.present),
});
const lesson = createLesson({
  api, session, announce,
  nextStop: () => actions.perform(() => api.nextStop(session().id), true),
  goTo: (at) => {
    actions.pause();
    return actions.perform(() => toStop(at), true);
  },
  ask: (slot) => predict.stop(slot),
  answering: () => predict.answering,
});
const author = createAuthor({ api, session, announce });
createGallery({ api, root: $("gallery-panel"), list: $("gallery") });
const render = createPainter({
  views, editor, setup, controls, timeline, share, lesson, author,
  output: createOutput($("output")),
  // your own loop's diagnoses (issue 37): loaded the first time a loop is no preset's
  doctor: document.body.classList.contains("embed") ? null : lazyView((s) => s.preset === null,
    () => import("./views/doctor.js").then((m) => m.createDoctor($("doctor"), api))),
  parabola: lazyView(() => true,
    () => import("./views/parabola.js").then((m) => m.createParabola($("theta")))),
});
const actions = createActions({ render, controls, announce });
// a busy server: say so while the request waits to be sent again; the answer's own sentence
// (or the error, after the last try) replaces it
onBusy((retry) => announce(retry ? BUSY_WORDS : ""));
const predict = createPredict({
  api, session, render, announce,
  enqueue: (task) => actions.enqueue(task),
  failed: (error) => {
    showProblem($("problem"), current.codePanel, error);
    actions.recover(error, true);
  },
});
createExplain({ root: $("grads"), api, session, announce });
installFolds($("controls"));

installKeys({
  ready: () => session() !== null,
  controls,
  next: () => nextLine(),
  back: goBack,
  toggleRun: () => actions.toggleRun(),
  togglePredict: () => predict.toggle(),
});

/** Presenter mode (`?present=1` or the button): the projector's layout, kept in the URL. */
function setPresent(on) {
  current.present = on;
  document.body.classList.toggle("present", on);
  // a store too big for its cell (moons' heat maps, Adam's state) scrolls inside it: by
  // keyboard too, as a named group
  for (const body of document.querySelectorAll(".stores > .store > .body")) {
    const name = body.closest("section").getAttribute("aria-label");
    for (const [key, value] of [["tabindex", "0"], ["role", "group"], ["aria-label", name]]) {
      if (on) body.setAttribute(key, value);
      else body.removeAttribute(key);
    }
  }
  if (on) $("extras").setAttribute("tabindex", "0"); // its whole row scrolls
  else $("extras").removeAttribute("tabindex");
  controls.present(on);
  if (session()) writeUrl(session(), on);
}

/** A lesson's link: this tab's session on it if it still has one (reopening the link resumes
 * where the student was), else a new one. */
async function lessonSession(lesson) {
  const id = storedId();
  if (id) {
    try {
      const kept = await api.get(id);
      if (kept.lesson?.id === lesson) return kept;
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 404) throw error;
    }
  }
  const fresh = await api.lessonSession(lesson);
  storeId(fresh.id);
  return fresh;
}

// read before the first render puts the session's setup in the address bar
const hashToken = new URLSearchParams(location.hash.slice(1)).get("edit");

async function start() {
  const url = readUrl();
  setPresent(url.present);
  predict.set(url.predict);
  try {
    const presets = catalogue().presets;
    current.scenarios = catalogue().scenarios;
    editor.setPresets(presets);
    const preset = presets.find((p) => p.name === url.preset);
    const scaler = url.setup.amp === "float16" && url.setup.grad_scaler !== false;
    const program = url.program ?? (preset ? presetProgram(preset, scaler) : null);
    // a link may ask for an accumulation the scenario's batch does not divide: ignore it
    const ks = current.scenarios.find((s) => s.name === (url.setup.scenario ?? "neuron"))?.accumulate;
    if (ks && !ks.includes(url.setup.accumulate ?? 1)) delete url.setup.accumulate;
    // a shared moment (/?snapshot=token) opens as this tab's own session; rendering it puts
    // the setup in the URL instead, so a reload keeps the copy rather than opening it again
    let opened = null;
    let notice = null;
    if (url.snapshot) {
      try {
        opened = await api.open(url.snapshot);
        storeId(opened.id);
      } catch (error) {
        if (!(error instanceof ApiError) || (error.status !== 404 && error.status !== 422)) throw error;
        notice = {
          heading: "This shared link does not open here:",
          message: "the server has no such moment (the link may be mistyped, or from another server). A new session was started instead.",
          line: null,
        };
      }
    }
    // an LMS's launch (/?session=<id>): that session becomes this tab's; rendering it puts its
    // setup in the URL in place of the parameter, so the id leaves the address bar
    let launched = false;
    if (!opened && url.session) {
      try {
        opened = await api.get(url.session);
        storeId(opened.id);
        launched = true;
        applyLtiRole(opened.id); // the instructor's view or the student's
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 404) throw error;
      }
    }
    if (url.lesson && !opened) opened = await lessonSession(url.lesson);
    render(opened ?? (await openSession(api, url.setup, program)), true);
    controls.ready();
    $("edit").disabled = false;
    // the edit link of a saved lesson (`?lesson=id#edit=token`): the token never leaves the page
    if (url.lesson && hashToken) await author.edit(url.lesson, hashToken);
    predict.ready();
    if (notice) {
      showProblem($("problem"), current.codePanel, notice);
      announce(`${notice.heading} ${notice.message}`);
    } else {
      announce(opened && !launched ? `Opened a shared moment: ${timeline.label(session().moment)}.` : describe(session()));
    }
  } catch (error) {
    controls.failed(error.message);
    showProblem($("problem"), current.codePanel, error);
  }
  document.body.dataset.ready = "1";
}

start();
