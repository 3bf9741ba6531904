// What the page knows of the engine: the loop entries (name, Python, comment, the stores each
// reads and writes), the scenarios, the presets and the default programs, as the server
// rendered them into the page (app/web/catalogue.py, `#catalogue`). The page keeps no list
// of its own: a new entry on the server shows here with nothing to change.

let read = null;

/** The whole catalogue, parsed once (on first use: a module importing this may load early). */
export function catalogue() {
  read ??= JSON.parse(document.getElementById("catalogue").textContent);
  return read;
}

/** Every entry a program may hold, in the server's order. */
export const entries = () => catalogue().entries;

/** One entry's row, or undefined for a name the server does not have. */
export const entry = (name) => entries().find((e) => e.name === name);

export const scenarios = () => catalogue().scenarios;
export const presets = () => catalogue().presets;

/** A preset's title ("Skip zero_grad") for its id ("skip_zero_grad"), as the Loop menu names it:
 * the one label a preset has wherever the page shows it; the id itself for one the server
 * does not list. */
export const presetTitle = (name) => presets().find((p) => p.name === name)?.title ?? name;

/** The server's default loop for these toggles (program_for in app/engine/program.py). */
export function defaultProgram(toggles, k = 1, scaler = false) {
  const found = catalogue().defaults.find((d) =>
    d.skip_zero_grad === Boolean(toggles.skip_zero_grad) &&
    d.step_first === Boolean(toggles.step_first) && d.accumulate === k && d.scaler === scaler);
  return found ? [...found.program] : null;
}

/** Whether any entry of `program` reads or writes `store` (the table's reads and writes). */
export const touches = (program, store) =>
  program.some((name) => {
    const e = entry(name);
    return Boolean(e) && (e.reads.includes(store) || e.writes.includes(store));
  });
