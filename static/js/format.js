// Numbers as a student expects to read them. The API sends the exact float64 rendering of
// what PyTorch holds, so a float32 1.175 arrives as 1.1749999523162842; we show the shortest
// decimal that rounds back to the same float32 (or float64), which is what print() shows.

const NON_FINITE = { NaN: "nan", Infinity: "inf", "-Infinity": "-inf" };

export function toNumber(v) {
  if (typeof v === "number") return v;
  return v === "NaN" ? NaN : v === "Infinity" ? Infinity : -Infinity;
}

/** Shortest decimal that round-trips to the same value in `dtype`. */
export function exact(v, dtype = "float64") {
  if (typeof v !== "number") return NON_FINITE[v] ?? String(v);
  if (dtype === "float32") {
    const target = Math.fround(v);
    for (let p = 1; p <= 9; p++) {
      const s = Number(target.toPrecision(p));
      if (Math.fround(s) === target) return String(s);
    }
  }
  return String(v); // JS already prints the shortest float64 round trip
}

/** A short reading (about `digits` significant figures) for dense displays; exact() on hover. */
export function short(v, dtype = "float64", digits = 4) {
  if (typeof v !== "number") return NON_FINITE[v] ?? String(v);
  const full = exact(v, dtype);
  if (full.replace(/^-|\.|e.*$/g, "").replace(/^0+/, "").length <= digits) return full;
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(digits - 1);
  return String(Number(v.toPrecision(digits)));
}

/**
 * What the page prints. A float32 keeps about 7 significant digits and the last one is
 * rounding noise (w after the first step is 1.1750001, one ulp above 1.175), so we print 6,
 * like PyTorch's own tensor printing hides it; float64 (moons) gets 5, enough to compare.
 * The shortest round trip and the exact value are in the tooltip: see `exactTitle`.
 */
export function display(v, dtype = "float64") {
  return short(v, dtype, dtype === "float32" ? 6 : 5);
}

export function exactTitle(v, dtype = "float64") {
  if (typeof v !== "number") return String(v);
  return `${exact(v, dtype)} as ${dtype} (exactly ${v})`;
}

/** Flatten nested lists to [value, index-tuple] pairs in row-major order. */
export function cells(nested, index = []) {
  if (!Array.isArray(nested)) return [[nested, index]];
  return nested.flatMap((item, i) => cells(item, [...index, i]));
}

export function sameValue(a, b) {
  return a === b || (Number.isNaN(toNumber(a)) && Number.isNaN(toNumber(b)));
}
