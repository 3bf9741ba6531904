// Where the setup lives between visits: the URL (shareable: an instructor's link sets the
// scenario, lr, optimizer, accumulation, the parabola and the loop) and sessionStorage (the
// student's live session survives a reload, but a new tab starts fresh).

import { catalogue, defaultProgram, entry, scenarios } from "./catalogue.js";

const KEY = "loop-stepper.session";
// the presets the two checkboxes already say; any other program goes in the URL itself
const TOGGLE_PRESETS = ["correct", "skip_zero_grad", "step_first"];

/** Whether backward and step go through a GradScaler (its loop ends with scaler.update()). */
export const scaled = (session) => Boolean(session.amp?.scaler);

/** A preset's loop as a session runs it: with a GradScaler, scaler.update() at its end. */
export const presetProgram = (preset, scaler) =>
  [...(scaler ? preset.scaled_program : preset.program)];

export const sameList = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

/** h of a parabola session (its theory carries it). */
export function curvatureOf(session) {
  return session.theory?.curvature;
}

/** What only creation sets, read off a session, to carry into a new one. */
export function setupOf(s) {
  const o = s.optimizer;
  const optimizer = o.kind === "adam"
    ? { kind: "adam", betas: o.betas, weight_decay: o.weight_decay }
    : { kind: "sgd", momentum: o.momentum ?? 0, weight_decay: o.weight_decay };
  const setup = { scenario: s.scenario, ...s.toggles, optimizer, accumulate: s.accumulate };
  if (s.theory) Object.assign(setup, { curvature: curvatureOf(s), theta_star: s.theory.theta_star });
  setup.max_norm = s.max_norm;
  if (s.scheduler) {
    const k = s.scheduler;
    setup.scheduler = k.kind === "step"
      ? { kind: "step", step_size: k.step_size, gamma: k.gamma } : { kind: "cosine", T_max: k.T_max };
  }
  if (s.scenario === "moons") Object.assign(setup, s.model_options);
  if (s.scenario === "custom") { // your own model: its spec, in place of a scenario
    delete setup.scenario;
    Object.assign(setup, s.spec, { dtype: s.model_options.dtype });
  }
  if (s.amp) {
    setup.amp = s.amp.dtype;
    if (s.amp.dtype === "float16" && !s.amp.scaler) setup.grad_scaler = false;
  }
  return setup;
}

function number(q, name, lo, hi, open = false) {
  const v = Number(q.get(name));
  if (!q.has(name) || q.get(name).trim() === "" || !Number.isFinite(v)) return undefined;
  return v >= lo && (open ? v < hi : v <= hi) ? v : undefined;
}

/** The setup the URL asks for; only keys present in the URL are set. */
export function readUrl(search = location.search) {
  const q = new URLSearchParams(search);
  const setup = {};
  const scenario = q.get("scenario");
  if (scenarios().some((s) => s.name === scenario)) setup.scenario = scenario;
  const lr = number(q, "lr", 0, 100);
  if (lr !== undefined && lr > 0) setup.lr = lr;
  for (const flag of ["skip_zero_grad", "step_first"]) {
    if (q.has(flag)) setup[flag] = q.get(flag) === "1" || q.get(flag) === "true";
  }
  const kind = q.get("optimizer");
  const decay = number(q, "weight_decay", 0, 1) ?? 0;
  if (kind === "sgd") {
    setup.optimizer = { kind, momentum: number(q, "momentum", 0, 1, true) ?? 0, weight_decay: decay };
  } else if (kind === "adam") {
    const betas = [number(q, "beta1", 0, 1, true) ?? 0.9, number(q, "beta2", 0, 1, true) ?? 0.999];
    setup.optimizer = { kind, betas, weight_decay: decay };
  }
  const k = number(q, "accumulate", 1, 8);
  if (Number.isInteger(k)) setup.accumulate = k;
  if (setup.scenario === "parabola") {
    const h = number(q, "curvature", 0, 1000);
    if (h !== undefined && h > 0) setup.curvature = h;
    const star = number(q, "theta_star", -100, 100);
    if (star !== undefined) setup.theta_star = star;
  }
  const maxNorm = number(q, "max_norm", 0, 1000);
  if (maxNorm !== undefined && maxNorm > 0) setup.max_norm = maxNorm;
  const sched = q.get("scheduler");
  if (sched === "step") {
    const size = number(q, "step_size", 1, 10000), gamma = number(q, "gamma", 0, 1);
    if (Number.isInteger(size) && gamma > 0) setup.scheduler = { kind: "step", step_size: size, gamma };
  } else if (sched === "cosine") {
    const tMax = number(q, "T_max", 1, 10000);
    if (Number.isInteger(tMax)) setup.scheduler = { kind: "cosine", T_max: tMax };
  }
  if (setup.scenario === "moons") {
    const p = number(q, "dropout", 0, 1, true);
    if (p !== undefined) setup.dropout = p;
    for (const flag of ["batchnorm", "softmax_before_loss"]) {
      if (q.has(flag)) setup[flag] = q.get(flag) === "1" || q.get(flag) === "true";
    }
    if (["float64", "float32"].includes(q.get("dtype"))) setup.dtype = q.get("dtype");
  }
  // mixed precision on a float32 model (neuron, or moons with dtype float32)
  const amp = q.get("amp");
  if (["bfloat16", "float16"].includes(amp) && setup.scenario !== "parabola" &&
      (setup.scenario !== "moons" || setup.dtype === "float32")) {
    setup.amp = amp;
    if (amp === "float16" && q.get("grad_scaler") === "0") setup.grad_scaler = false;
  }
  const spec = decodeSpec(q.get("spec"));
  if (spec) {
    delete setup.scenario;
    Object.assign(setup, spec);
    if (["float64", "float32"].includes(q.get("dtype"))) setup.dtype = q.get("dtype");
  }
  const program = (q.get("program") ?? "").split(",").filter((e) => entry(e));
  return {
    setup,
    program: program.length && program.length <= catalogue().max_program ? program : null,
    preset: q.get("preset"),
    compare: q.get("compare"),
    snapshot: q.get("snapshot"),
    // an LMS's launch (/lti/launch) sends the student to /?session=<id>: their own session
    session: q.get("session"),
    lesson: /^[A-Za-z0-9_-]{1,64}$/.test(q.get("lesson") ?? "") ? q.get("lesson") : null,
    present: q.get("present") === "1",
    predict: q.get("predict") === "1",
  };
}

/** A spec's keys: what `?spec=` carries (base64url of its JSON). */
export const SPEC_KEYS = ["model", "data", "task", "loss", "validation", "batch_size", "standardize", "shuffle"];

export function encodeSpec(spec) {
  const bytes = new TextEncoder().encode(JSON.stringify(spec));
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** `?spec=`'s object (its model and data at least), or null for none or a broken one: the
 * server checks the rest. */
export function decodeSpec(text) {
  if (!text) return null;
  try {
    const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    const spec = JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
    if (!spec || !Array.isArray(spec.model) || typeof spec.data !== "object") return null;
    return Object.fromEntries(SPEC_KEYS.filter((k) => k in spec).map((k) => [k, spec[k]]));
  } catch {
    return null;
  }
}

/** The setup a session was created with beyond the optimizer (scheduler, moons' model,
 * autocast), as URL parameters: the stepper's own URL and compare mode's way back to it. */
export function setupParams(session, q) {
  const k = session.scheduler;
  if (k) {
    q.set("scheduler", k.kind);
    if (k.kind === "step") {
      q.set("step_size", String(k.step_size));
      q.set("gamma", String(k.gamma));
    } else q.set("T_max", String(k.T_max));
  }
  const m = session.model_options;
  if (session.scenario === "moons") {
    if (m.dropout) q.set("dropout", String(m.dropout));
    if (m.batchnorm) q.set("batchnorm", "1");
    if (m.softmax_before_loss) q.set("softmax_before_loss", "1");
    if (m.dtype !== "float64") q.set("dtype", m.dtype);
  }
  if (session.amp) {
    q.set("amp", session.amp.dtype);
    if (session.amp.dtype === "float16" && !session.amp.scaler) q.set("grad_scaler", "0");
  }
}

/** Put the session's setup in the URL without a navigation, so the link can be shared. */
export function writeUrl(session, present) {
  if (session.lesson) { // the lesson says the setup: its link is enough to come back
    const q = new URLSearchParams({ lesson: session.lesson.id });
    if (present) q.set("present", "1");
    const url = `${location.pathname}?${q}`;
    if (url !== location.pathname + location.search) history.replaceState(null, "", url);
    return;
  }
  const q = new URLSearchParams({
    ...(session.scenario === "custom"
      ? { spec: encodeSpec(session.spec), dtype: session.model_options.dtype }
      : { scenario: session.scenario }),
    lr: String(session.lr),
    skip_zero_grad: session.toggles.skip_zero_grad ? "1" : "0",
    step_first: session.toggles.step_first ? "1" : "0",
  });
  const o = session.optimizer;
  if (o.kind === "adam" || o.momentum || o.weight_decay) {
    q.set("optimizer", o.kind);
    if (o.kind === "sgd" && o.momentum) q.set("momentum", String(o.momentum));
    if (o.kind === "adam") {
      q.set("beta1", String(o.betas[0]));
      q.set("beta2", String(o.betas[1]));
    }
    if (o.weight_decay) q.set("weight_decay", String(o.weight_decay));
  }
  if (session.accumulate !== 1) q.set("accumulate", String(session.accumulate));
  if (session.theory) {
    q.set("curvature", String(curvatureOf(session)));
    q.set("theta_star", String(session.theory.theta_star));
  }
  if (session.max_norm !== 1) q.set("max_norm", String(session.max_norm));
  setupParams(session, q);
  const usual = defaultProgram(session.toggles, session.accumulate, scaled(session));
  if (!usual || !sameList(session.program, usual)) {
    if (session.preset && !TOGGLE_PRESETS.includes(session.preset)) q.set("preset", session.preset);
    else q.set("program", session.program.join(","));
  }
  if (present) q.set("present", "1");
  // Predict first stays on across reloads and in a shared link
  if (new URLSearchParams(location.search).get("predict") === "1") q.set("predict", "1");
  // the compact page for an iframe stays compact (a reload inside a slide keeps it)
  if (new URLSearchParams(location.search).get("embed") === "1") q.set("embed", "1");
  const url = `${location.pathname}?${q}`;
  if (url !== location.pathname + location.search) history.replaceState(null, "", url);
}

export const storedId = () => sessionStorage.getItem(KEY);
export const storeId = (id) => sessionStorage.setItem(KEY, id);

const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

/** Would a session made from `setup` differ from `session` in what only creation sets? */
export function differs(session, setup) {
  if (setup.scenario && setup.scenario !== session.scenario) return true;
  if (Boolean(setup.model) !== (session.scenario === "custom")) return true;
  if (setup.model && SPEC_KEYS.some((k) => k in setup &&
      JSON.stringify(setup[k]) !== JSON.stringify(session.spec[k]))) return true;
  if (setup.accumulate !== undefined && setup.accumulate !== session.accumulate) return true;
  const o = setup.optimizer, s = session.optimizer;
  if (o && (o.kind !== s.kind || o.weight_decay !== s.weight_decay)) return true;
  if (o?.kind === "sgd" && o.momentum !== s.momentum) return true;
  if (o?.kind === "adam" && !sameList(o.betas, s.betas)) return true;
  if (setup.curvature !== undefined && !near(setup.curvature, curvatureOf(session) ?? NaN)) return true;
  if (setup.theta_star !== undefined && !near(setup.theta_star, session.theory?.theta_star ?? NaN)) {
    return true;
  }
  if (setup.max_norm !== undefined && !near(setup.max_norm, session.max_norm)) return true;
  const k = setup.scheduler, sk = session.scheduler;
  if (k !== undefined && JSON.stringify(k) !== JSON.stringify(sk && (sk.kind === "step"
    ? { kind: "step", step_size: sk.step_size, gamma: sk.gamma } : { kind: "cosine", T_max: sk.T_max }))) {
    return true;
  }
  const m = session.model_options;
  for (const name of ["dropout", "batchnorm", "softmax_before_loss", "dtype"]) {
    if (setup[name] !== undefined && setup[name] !== m[name]) return true;
  }
  if ((setup.amp ?? null) !== (session.amp?.dtype ?? null)) return true;
  if (setup.amp === "float16" && (setup.grad_scaler !== false) !== session.amp.scaler) return true;
  return false;
}

/**
 * The session to open: the stored one if it still exists (a 404 means it expired) and was
 * made with the setup the URL asks for, else a new one; then lr, toggles and the program
 * are patched to what the URL says (a program wins over the toggles).
 */
export async function openSession(api, setup, program) {
  const id = storedId();
  let session = null;
  if (id) {
    try {
      session = await api.get(id);
    } catch (error) {
      if (error.status !== 404) throw error;
    }
  }
  if (session && differs(session, setup)) session = null;
  if (!session) {
    const { skip_zero_grad, step_first, ...rest } = setup;
    return storeAndReturn(await api.create(program ? { ...rest, program } : setup));
  }
  if (!program) {
    const changes = {};
    if (setup.lr !== undefined && setup.lr !== session.lr) changes.lr = setup.lr;
    for (const flag of ["skip_zero_grad", "step_first"]) {
      if (setup[flag] !== undefined && setup[flag] !== session.toggles[flag]) {
        changes[flag] = setup[flag];
      }
    }
    if (Object.keys(changes).length) session = await api.patch(session.id, changes);
  } else if (setup.lr !== undefined && setup.lr !== session.lr) {
    session = await api.patch(session.id, { lr: setup.lr });
  }
  if (program && !sameList(program, session.program)) {
    session = await api.patch(session.id, { program });
  }
  return storeAndReturn(session);
}

function storeAndReturn(session) {
  storeId(session.id);
  return session;
}
