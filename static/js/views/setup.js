// Setup chosen at creation: the optimizer (SGD with momentum and weight decay, or Adam with
// its betas), accumulation over k micro-batches, the parabola's curvature h and θ*, and mixed
// precision (autocast bfloat16 or float16, with or without a GradScaler: float32 models). The
// server fixes these when it makes a session, so changing one asks for a new session. The
// fields mirror the session after every answer, like the other controls.

import { curvatureOf } from "../state.js";

const $ = (id) => document.getElementById(id);
const FIELDS = {
  momentum: [0, 1, true], weight_decay: [0, 1, false], beta1: [0, 1, true], beta2: [0, 1, true],
  curvature: [0, 1000, false, true], theta_star: [-100, 100, false],
  max_norm: [0, 1000, false, true], step_size: [1, 10000, false], gamma: [0, 1, false, true],
  T_max: [1, 10000, false], dropout: [0, 1, true],
};

/** A field's number if valid ([lo, hi] or [lo, hi) ; `positive` excludes lo), else null. */
function valueOf(input, [lo, hi, open, positive]) {
  const v = Number(input.value);
  const ok = input.value.trim() !== "" && Number.isFinite(v) && v >= lo && (open ? v < hi : v <= hi) &&
    !(positive && v === lo);
  input.setAttribute("aria-invalid", String(!ok));
  return ok ? v : null;
}

export function createSetup(onChange) {
  const els = {
    kind: $("optimizer"), accumulate: $("accumulate"), box: $("setup"), scheduler: $("scheduler"),
    batchnorm: $("batchnorm"), softmax: $("softmax_before_loss"), dtype: $("dtype"),
    amp: $("amp"), ampBox: $("amp-box"),
  };
  for (const name of Object.keys(FIELDS)) els[name] = $(name);
  let scenario = "neuron";

  function show(kind) {
    for (const label of els.box.querySelectorAll("[data-for]")) {
      label.hidden = ![kind, scenario, els.scheduler.value].includes(label.dataset.for);
    }
    els.ampBox.hidden = scenario === "parabola"; // float64: autocast does not apply
  }

  /** The setup the fields say, or null while one of them is not a valid number. */
  function read() {
    const v = {};
    for (const [name, bounds] of Object.entries(FIELDS)) {
      if (els[name].closest("[data-for]")?.hidden) continue;
      v[name] = valueOf(els[name], bounds);
      if (v[name] === null) return null;
    }
    const kind = els.kind.value;
    const setup = {
      optimizer: kind === "adam"
        ? { kind, betas: [v.beta1, v.beta2], weight_decay: v.weight_decay }
        : { kind, momentum: v.momentum, weight_decay: v.weight_decay },
      accumulate: Number(els.accumulate.value),
    };
    if (scenario === "parabola") Object.assign(setup, { curvature: v.curvature, theta_star: v.theta_star });
    setup.max_norm = v.max_norm;
    const sched = els.scheduler.value;
    setup.scheduler = sched === "step" ? { kind: "step", step_size: v.step_size, gamma: v.gamma }
      : sched === "cosine" ? { kind: "cosine", T_max: v.T_max } : undefined;
    if (scenario === "moons") {
      Object.assign(setup, {
        dropout: v.dropout, batchnorm: els.batchnorm.checked,
        softmax_before_loss: els.softmax.checked, dtype: els.dtype.value,
      });
    }
    // "", "bfloat16", "float16", "float16-unscaled"; undefined keys replace the old setup's
    const amp = scenario === "parabola" ? "" : els.amp.value;
    setup.amp = amp ? (amp.startsWith("float16") ? "float16" : amp) : undefined;
    setup.grad_scaler = amp === "float16-unscaled" ? false : undefined;
    if (amp && scenario === "moons") setup.dtype = "float32"; // autocast wants a float32 model
    return setup;
  }

  els.box.addEventListener("change", () => {
    show(els.kind.value);
    const setup = read();
    if (setup) onChange(setup);
  });

  return {
    render(session, scenarios) {
      scenario = session.scenario;
      const o = session.optimizer;
      const set = (name, value) => {
        if (document.activeElement !== els[name]) els[name].value = String(value);
        els[name].setAttribute("aria-invalid", "false");
      };
      els.kind.value = o.kind;
      set("weight_decay", o.weight_decay);
      set("momentum", o.momentum ?? 0);
      set("beta1", o.betas?.[0] ?? 0.9);
      set("beta2", o.betas?.[1] ?? 0.999);
      if (session.theory) {
        set("curvature", curvatureOf(session));
        set("theta_star", session.theory.theta_star);
      }
      const ks = scenarios?.find((s) => s.name === session.scenario)?.accumulate ?? [session.accumulate];
      if (els.accumulate.dataset.ks !== ks.join()) {
        els.accumulate.dataset.ks = ks.join();
        els.accumulate.replaceChildren(...ks.map((k) => {
          const opt = document.createElement("option");
          opt.value = String(k);
          opt.textContent = k === 1 ? "1 (whole batch)" : `${k} micro-batches`;
          return opt;
        }));
      }
      els.accumulate.value = String(session.accumulate);
      set("max_norm", session.max_norm);
      const k = session.scheduler;
      els.scheduler.value = k?.kind ?? "";
      if (k?.kind === "step") {
        set("step_size", k.step_size);
        set("gamma", k.gamma);
      }
      if (k?.kind === "cosine") set("T_max", k.T_max);
      const m = session.model_options;
      set("dropout", m.dropout);
      els.batchnorm.checked = m.batchnorm;
      els.softmax.checked = m.softmax_before_loss;
      els.dtype.value = m.dtype === "float32" && scenario === "moons" ? "float32" : "float64";
      const a = session.amp;
      els.amp.value = !a ? "" : a.dtype === "bfloat16" ? "bfloat16" : a.scaler ? "float16"
        : "float16-unscaled";
      els.accumulate.disabled = ks.length < 2;
      show(o.kind);
    },
  };
}
