// Mixed precision: what autocast made of each tensor (the weights stay float32, the output is
// bfloat16 or float16, the loss float32) and, with float16, the GradScaler's store: the scale
// scaler.scale(loss) multiplies by, whether this iteration's unscale found inf/NaN (then
// scaler.step skips optimizer.step), the steps skipped so far and the good steps in a row
// (2000 of them double the scale). The first steps are skipped while the scale comes down.

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function createAmp(section, body) {
  const dtypes = document.createElement("p");
  dtypes.className = "value amp-dtypes";
  const scale = document.createElement("p");
  scale.className = "value amp-scale";
  const found = document.createElement("p");
  found.className = "value amp-found";
  const skipped = document.createElement("p");
  skipped.className = "value amp-skipped";
  body.replaceChildren(dtypes, scale, found, skipped);

  return function render(s) {
    section.hidden = !s.amp;
    if (!s.amp) return;
    const weights = s.params[0]?.dtype ?? "float32";
    const out = s.graph.out_dtype ?? "none yet";
    const loss = s.loss_dtype ?? "none yet";
    dtypes.textContent = `autocast ${s.amp.dtype}: weights ${weights}, out ${out}, loss ${loss}` +
      (s.amp.scaler ? "" : s.amp.dtype === "float16"
        ? " (no GradScaler: a float16 gradient below 6e-8 becomes 0)" : " (bfloat16 has float32's range: no scaler needed)");
    const k = s.scaler;
    for (const el of [scale, found, skipped]) el.hidden = !k;
    if (!k) return;
    scale.textContent = `scaler.get_scale() = ${k.scale} (2^${Math.log2(k.scale)})`;
    found.textContent = k.found_inf === null
      ? "this iteration: no unscale yet"
      : k.found_inf
        ? "this iteration: inf/NaN found in .grad: scaler.step skips optimizer.step, scaler.update() halves the scale"
        : "this iteration: .grad finite: scaler.step ran optimizer.step";
    skipped.textContent = `${plural(k.skipped_steps, "step")} skipped so far; ` +
      `${plural(k.growth_tracker, "good step")} in a row (2000 double the scale)`;
  };
}
