// The stepper's keys: n or → next line, b or ← one moment back, Space run / pause, r reset,
// p Predict first;
// never while typing in a field (Enter still presses a focused button). Before the session
// exists a key cannot run anything, and says so rather than being dropped.

function typing(target) {
  return target.closest?.("input:not([type=checkbox]), select, textarea, [contenteditable]");
}

const KEYS = ["n", "ArrowRight", " ", "r"];

/** `ready()` is true once a session exists; `controls` say "not yet" while loading. */
export function installKeys({ ready, controls, next, back, toggleRun, togglePredict }) {
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    if (!ready()) {
      if (KEYS.includes(e.key) && controls.loading) {
        e.preventDefault();
        controls.notYet();
      }
      return;
    }
    if (e.key === "n" || e.key === "ArrowRight") {
      e.preventDefault();
      next();
    } else if (e.key === "b" || e.key === "ArrowLeft") {
      e.preventDefault();
      back();
    } else if (e.key === " " && !e.target.matches?.("input[type=checkbox]")) {
      // space is run/pause everywhere but a checkbox; Enter still presses a focused button
      e.preventDefault();
      toggleRun();
    } else if (e.key === "p" && togglePredict) {
      e.preventDefault();
      togglePredict();
    } else if (e.key === "r") {
      e.preventDefault();
      controls.els.reset.click();
    }
  });
}
