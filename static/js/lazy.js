// A view whose code loads the first time a Session needs it: the parabola's chart and the
// autocast panel are for a few setups, and 300 students loading the stepper at once share one
// classroom access point. Until then the view shows nothing (its section is hidden in the
// page); once loaded it paints the newest Session it was given, then paints as any view.

/** `needed(session)`: whether this Session shows the view; `load()`: resolves to the view. */
export function lazyView(needed, load) {
  let view = null;
  let loading = null;
  let latest = null;
  return function render(...args) {
    if (view) return view(...args);
    if (!needed(args[0])) return undefined;
    latest = args;
    loading ??= load().then(
      (made) => {
        view = made;
        view(...latest);
      },
      (error) => {
        loading = null; // the next Session that needs it tries again
        throw error;
      },
    );
    return undefined;
  };
}
