// Controls and the announcer. The controls mirror the session (lr, toggles, scenario) after
// every answer, so what they show is what the server holds, not what was last typed.
// The announcer is a polite live region: one short sentence per line run, in words.
// Until the first session exists the controls are disabled and say "Loading…" (the page
// serves them that way), so no click before then is lost without a word.

import { display } from "../format.js";

const $ = (id) => document.getElementById(id);

export function createControls(handlers) {
  const els = {
    next: $("next"), run: $("run"), reset: $("reset"), speed: $("speed"), scenario: $("scenario"),
    lr: $("lr"), skip: $("skip_zero_grad"), first: $("step_first"), present: $("present"),
    form: $("controls"), runN: $("run-n"), iterations: $("iterations"),
  };
  const live = createLive($("live"), $("status"), [els.form, document.querySelector("main")]);
  els.form.addEventListener("submit", (e) => e.preventDefault());
  els.next.addEventListener("click", handlers.next);
  els.run.addEventListener("click", handlers.toggleRun);
  els.reset.addEventListener("click", handlers.reset);
  els.runN.addEventListener("click", () => {
    const n = Number(els.iterations.value);
    const ok = Number.isInteger(n) && n >= 1 && n <= 1000;
    els.iterations.setAttribute("aria-invalid", String(!ok));
    if (ok) handlers.runIterations(n);
  });
  els.scenario.addEventListener("change", () => handlers.scenario(els.scenario.value));
  els.lr.addEventListener("change", () => {
    const lr = Number(els.lr.value);
    const ok = els.lr.value.trim() !== "" && Number.isFinite(lr) && lr > 0 && lr <= 100;
    els.lr.setAttribute("aria-invalid", String(!ok));
    if (ok) handlers.patch({ lr });
  });
  els.skip.addEventListener("change", () => handlers.patch({ skip_zero_grad: els.skip.checked }));
  els.first.addEventListener("change", () => handlers.patch({ step_first: els.first.checked }));
  els.present.addEventListener("click", handlers.togglePresent);

  return {
    els,
    ...live,
    render(session) {
      els.scenario.value = session.scenario;
      if (document.activeElement !== els.lr) els.lr.value = String(session.lr);
      els.lr.setAttribute("aria-invalid", "false");
      els.skip.checked = session.toggles.skip_zero_grad;
      els.first.checked = session.toggles.step_first;
    },
    running(on) {
      els.run.textContent = on ? "Pause" : "Run";
      els.run.setAttribute("aria-pressed", String(on));
      els.run.classList.toggle("running", on);
    },
    present(on) {
      els.present.setAttribute("aria-pressed", String(on));
    },
  };
}

/** The sentence for the line just run, e.g. "backward: weight.grad -23.5, bias.grad -8". */
export function describe(session) {
  const last = session.last;
  if (!last) return `Ready: ${session.scenario}, lr ${session.lr}. Next line: ${session.next_line}.`;
  const dtype = session.params[0]?.dtype;
  const one = (v) => (Array.isArray(v) ? one(v[0]) : v);
  const scalar = session.params.every((p) => p.shape.reduce((a, b) => a * b, 1) === 1);
  const list = (key, suffix) =>
    session.params
      .map((p) => `${p.name}${suffix} ${p[key] === null ? "None" : display(one(p[key]), dtype)}`)
      .join(", ");
  const nodes = session.graph.nodes.length;
  const noneGrads = session.params.filter((p) => p.grad === null).length;
  const size = session.params.length;
  switch (last.line.split("(")[0]) {
    case "forward":
      return `forward: graph built, ${nodes} nodes.`;
    case "loss":
      return `loss: ${session.loss === null ? "None" : display(session.loss, dtype)}.`;
    case "zero_grad":
      return scalar
        ? `zero_grad: ${list("grad", ".grad")}.`
        : `zero_grad: all ${size} .grad buffers ${last.line.includes("False") ? "zeros" : "None"}.`;
    case "backward":
      return scalar
        ? `backward: ${list("grad", ".grad")}; graph ${session.graph.status}.`
        : `backward: ${size} .grad buffers added to; graph ${session.graph.status}.`;
    case "step":
      if (noneGrads === size) return "step: nothing moved, every .grad is None.";
      return scalar ? `step: ${list("value", "")}.` : `step: ${size - noneGrads} parameters moved.`;
    default:
      return `${last.line}.`;
  }
}

/**
 * The loading state of a set of controls: `fieldset` (disabled while loading), `status` (a
 * role=status text) and `busy` (elements marked aria-busy while loading).
 */
export function createLive(fieldset, status, busy) {
  const setBusy = (on) => busy.forEach((el) => el?.setAttribute("aria-busy", String(on)));
  return {
    /** The session exists: controls on, the loading text gone. */
    ready() {
      fieldset.disabled = false;
      setBusy(false);
      status.textContent = "";
      status.hidden = true;
    },
    /** Still loading, and the user tried something: say so where the controls are. */
    notYet() {
      status.hidden = false;
      status.textContent = "Loading… not ready yet, try again in a moment.";
    },
    /** Loading failed: the controls stay off and the status says why. */
    failed(message) {
      setBusy(false);
      status.hidden = false;
      status.textContent = `Could not start: ${message}`;
    },
    get loading() {
      return fieldset.disabled;
    },
  };
}

export function createAnnouncer(region) {
  return (text) => {
    // clearing first makes a repeated sentence ("step: nothing moved") announced again
    region.textContent = "";
    setTimeout(() => (region.textContent = text), 30);
  };
}
