// The parabola's output: θ over the steps, measured, with the lesson's formal statement drawn
// over it. Without zero_grad the error obeys e(t+1) = (2 − ηh) e(t) − e(t−1): for 0 < ηh < 4
// it is A cos(ωt + φ), a swing that never shrinks (the Session's `theory` gives A, ω, φ);
// with zero_grad it shrinks by |1 − ηh| a step. Only the regime the loop is in is drawn; both
// are said in words, the one that applies first.

import { display } from "../format.js";
import { createChart, legend } from "./chart.js";

const NOTHING_MOVES = ["step_first", "zero_grad_before_step", "zeros"];

/** Which formula describes this loop: "without", "with", "still" or why none does. */
export function regime(session) {
  const o = session.optimizer;
  if (o.kind !== "sgd" || o.momentum || o.weight_decay) return "optimizer";
  if (session.toggles.skip_zero_grad) return "without";
  if (session.toggles.step_first || NOTHING_MOVES.includes(session.preset)) return "still";
  return session.preset === "correct" ? "with" : "other";
}

/** θ_t as measured: history gives θ when each loss ran; the current θ is the latest step. */
export function measured(session) {
  const points = session.history.map((p) => [p.iteration - 1, p.param]);
  const now = [session.params[0].value].flat(Infinity)[0];
  const last = points[points.length - 1];
  if (!last) points.push([0, now]);
  else if (now !== last[1]) points.push([last[0] + 1, now]);
  return points;
}

/** The mean spacing of the upward zero crossings of e = θ − θ*, if there are two or more. */
export function measuredPeriod(points, star) {
  const ups = [];
  for (let i = 1; i < points.length; i++) {
    const [t0, a] = points[i - 1], [, b] = points[i];
    const e0 = a - star, e1 = b - star;
    if (e0 < 0 && e1 >= 0) ups.push(t0 + -e0 / (e1 - e0));
  }
  return ups.length >= 2 ? (ups[ups.length - 1] - ups[0]) / (ups.length - 1) : null;
}

const range = (t1, dt = 0.25) => Array.from({ length: Math.round(t1 / dt) + 1 }, (_, i) => i * dt);

export function createParabola(root) {
  const box = document.createElement("div");
  box.className = "parabola";
  const words = document.createElement("div");
  words.className = "theory-text";
  root.replaceChildren(box);
  const chart = createChart(box, { xLabel: "step" });
  box.append(
    legend([
      { cls: "measured", text: "θ measured" },
      { cls: "predicted", text: "θ predicted" },
      { cls: "envelope", text: "envelope" },
      { cls: "star", text: "θ*" },
    ]),
    words,
  );

  let shown = "";
  return function render(session) {
    const th = session.theory;
    const star = th.theta_star, eh = th.eta_h;
    const points = measured(session);
    const theta0 = session.history[0]?.iteration === 1 ? session.history[0].param : 0;
    const e0 = theta0 - star;
    const w = th.without_zero_grad, factor = th.with_zero_grad.factor;
    const which = regime(session);
    const lastT = points[points.length - 1][0];
    const tEnd = Math.max(lastT + 1, w.period ? Math.ceil(2 * w.period) : 10, 10);
    const ts = range(tEnd);
    const series = [], marks = [{ y: star, cls: "star", label: `θ* = ${display(star)}` }];
    const include = [star, theta0];
    if (which === "without" && w.period !== null) {
      series.push({ cls: "predicted", points: ts.map((t) => [t, star + w.amplitude * Math.cos(w.omega * t + w.phase)]) });
      marks.push({ y: star + w.amplitude, cls: "envelope", label: "θ* + A" }, { y: star - w.amplitude, cls: "envelope", label: "θ* − A" });
    } else if (which === "without") {
      const e = [e0, (1 - eh) * e0];
      for (let t = 2; t <= tEnd; t++) e.push((2 - eh) * e[t - 1] - e[t - 2]);
      series.push({ cls: "predicted", soft: true, points: e.map((v, t) => [t, star + v]) });
    } else if (which === "with") {
      const env = (t) => Math.abs(e0) * factor ** t;
      series.push(
        { cls: "envelope", soft: factor > 1, points: ts.map((t) => [t, star + env(t)]) },
        { cls: "envelope", soft: factor > 1, points: ts.map((t) => [t, star - env(t)]) },
        { cls: "predicted", soft: factor > 1, points: range(tEnd, 1).map((t) => [t, star + e0 * (1 - eh) ** t]) },
      );
    }
    series.push({ cls: "measured", dots: true, points });
    const now = points[points.length - 1];
    chart({
      series, marks, include, xRange: [0, tEnd],
      aria: `θ over ${points.length} measured steps, now ${display(now[1])}; θ* = ${display(star)}`,
    });

    const period = measuredPeriod(points, star);
    const without = w.regime === "oscillates" && w.period === null
      ? `Without zero_grad: ηh = ${display(eh)} is so small that the swing is too slow to see.`
      : w.regime === "oscillates"
      ? `Without zero_grad: ηh = ${display(eh)} lies between 0 and 4, so θ swings around θ* for ever, amplitude A = ${display(w.amplitude, "float64")}: ` +
        `<strong class="period">period ${w.period.toFixed(1)} steps predicted</strong>` +
        (period === null ? "." : `, <span class="measured-period">${period.toFixed(1)} measured</span>.`) + " It never settles."
      : `Without zero_grad: ηh = ${display(eh)} ≥ 4, so the error grows without bound.`;
    const settles = th.with_zero_grad.settles;
    const withZero = `With zero_grad: the error shrinks by |1 − ηh| = ${display(factor)} a step` +
      (settles ? ", so θ settles at θ*." : `; that is not below 1, so it does not settle: ${factor === 1 ? "θ swings" : "the error grows"}.`);
    const other = {
      still: "This loop: step finds no gradient (None, or zeros with plain SGD), so θ stays where it started; neither formula applies.",
      optimizer: `This loop uses ${session.optimizer.kind === "adam" ? "Adam" : "SGD with momentum or weight decay"}; the formulas are for plain SGD, so only the measured θ is drawn.`,
      other: "This loop is neither the correct loop nor the loop without zero_grad; only the measured θ is drawn.",
    }[which];
    const lines = [
      { html: without, applies: which === "without" },
      { html: withZero, applies: which === "with" },
    ].sort((a, b) => b.applies - a.applies);
    const html = (other ? `<p class="applies"><strong>${other}</strong></p>` : "") +
      lines.map((l) => `<p class="${l.applies ? "applies" : "other"}">${l.applies ? "<strong>This loop.</strong> " : ""}${l.html}</p>`).join("");
    if (html !== shown) words.innerHTML = html; // rebuilt only when the words change
    shown = html;
    words.dataset.regime = which;
  };
}
