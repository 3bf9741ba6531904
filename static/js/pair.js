// Compare mode's pair: its lifecycle. Two live sessions from the same start and the same
// batches (same scenario, seed, lr and optimizer): the correct loop and the chosen bug. A
// preset that needs a setup (a scheduler, Adam, moons with dropout, float16 autocast) gets it
// on both sides; what is the bug itself (softmax before the loss, float16 without a
// GradScaler) goes on the bug's side only. The tab keeps the pair's ids (sessionStorage), so
// a reload finds the same two sessions if they still match the URL.

import { presetProgram, sameList } from "./state.js";

const KEY = "loop-stepper.compare";
export const SIDES = ["correct", "bug"];
// the optimizers compare mode offers; the URL uses the stepper's parameters for them
export const OPTIMIZERS = {
  sgd: null, // the server's default: plain SGD
  momentum: { kind: "sgd", momentum: 0.9, weight_decay: 0 },
  weight_decay: { kind: "sgd", momentum: 0, weight_decay: 0.1 },
  adam: { kind: "adam", betas: [0.9, 0.999], weight_decay: 0 },
};

// the setup keys that are the bug itself, not what it needs
const OWN = ["softmax_before_loss", "grad_scaler"];

/** A preset's setup: what both sides need (shared) and what only the bug's side has (own). */
function setups(preset) {
  const shared = {}, own = {};
  for (const [k, v] of Object.entries(preset?.setup ?? {})) (OWN.includes(k) ? own : shared)[k] = v;
  if (shared.amp && shared.scenario === "moons") shared.dtype = "float32"; // autocast: float32
  return { shared, own };
}

/** A preset's loop as a session with this setup runs it: a GradScaler's ends with
 * scaler.update() (the server's scaled_program). */
const looped = (preset, setup) =>
  presetProgram(preset, setup.amp === "float16" && setup.grad_scaler !== false);

/** Whether a session was made with what `setup` asks for. */
function fits(s, setup) {
  const m = s.model_options;
  return (!setup.scenario || s.scenario === setup.scenario) &&
    (!setup.optimizer || s.optimizer.kind === setup.optimizer.kind) &&
    Boolean(setup.scheduler) === Boolean(s.scheduler) &&
    (setup.amp ?? null) === (s.amp?.dtype ?? null) &&
    (setup.amp !== "float16" || (setup.grad_scaler !== false) === s.amp.scaler) &&
    (setup.dropout ?? 0) === m.dropout && (setup.batchnorm ?? false) === m.batchnorm &&
    (setup.softmax_before_loss ?? false) === m.softmax_before_loss;
}

/** Which of OPTIMIZERS a session's (or the URL's) optimizer is; "sgd" for plain SGD. */
export function optimizerName(o) {
  if (!o || (o.kind === "sgd" && !o.momentum && !o.weight_decay)) return "sgd";
  const same = (a, b) => a.kind === b.kind && (a.momentum ?? 0) === (b.momentum ?? 0) &&
    a.weight_decay === b.weight_decay && String(a.betas ?? "") === String(b.betas ?? "");
  return Object.keys(OPTIMIZERS).find((k) => OPTIMIZERS[k] && same(o, OPTIMIZERS[k])) ?? null;
}

/**
 * The pair: `sessions` ({correct, bug}), `bug` (the preset), `optimizer` (a key of
 * OPTIMIZERS) and `apart` (a line raised in a Next or Run: that loop stopped there, as the
 * script would, so the pair is out of step until Reset or a new pair).
 */
export function createPair(api) {
  const pair = { sessions: { correct: null, bug: null }, bug: null, optimizer: "sgd", apart: false };

  /** Two new sessions with one seed, lr and optimizer (and the setup the bug needs); the
   * second gets the bug's program. The old two are freed. */
  pair.make = async (scenario = "neuron", lr) => {
    const { sessions } = pair;
    const old = SIDES.map((side) => sessions[side]?.id).filter(Boolean);
    const spec = OPTIMIZERS[pair.optimizer];
    const { shared, own } = setups(pair.bug);
    if (shared.scenario && shared.scenario !== scenario) lr = undefined; // that scenario's own
    const common = { scenario, ...(spec ? { optimizer: spec } : {}), ...shared };
    const a = await api.create({ ...common, ...(lr ? { lr } : {}) });
    const theirs = { ...common, ...own };
    sessions.bug = await api.create({
      ...theirs, lr: a.lr, seed: a.seed, program: looped(pair.bug, theirs),
    });
    sessions.correct = a;
    pair.apart = false; // two new loops at row 0
    pair.optimizer = optimizerName(a.optimizer) ?? pair.optimizer; // a preset may need Adam
    for (const id of old) api.remove(id).catch(() => {});
  };

  /** The pair this tab had, if both still exist and match what the URL asks for. */
  pair.restore = async (setup) => {
    try {
      const ids = JSON.parse(sessionStorage.getItem(KEY) ?? "null");
      if (!ids) return false;
      const [a, b] = await Promise.all([api.get(ids.correct), api.get(ids.bug)]);
      const { shared, own } = setups(pair.bug);
      const theirs = { ...shared, ...own };
      const name = pair.optimizer;
      const ok = a.preset === "correct" && sameList(b.program, looped(pair.bug, theirs)) &&
        fits(a, shared) && fits(b, theirs) && a.seed === b.seed &&
        optimizerName(a.optimizer) === name && optimizerName(b.optimizer) === name &&
        a.scenario === (setup.scenario ?? "neuron") && b.scenario === a.scenario && a.lr === b.lr &&
        (setup.lr === undefined || setup.lr === a.lr);
      if (ok) Object.assign(pair.sessions, { correct: a, bug: b });
      return ok;
    } catch {
      return false;
    }
  };

  /** Remember the pair's ids for a reload of this tab. */
  pair.keep = () => sessionStorage.setItem(
    KEY, JSON.stringify({ correct: pair.sessions.correct.id, bug: pair.sessions.bug.id }));

  return pair;
}
