// The timeline (issue 9): every line run is a moment the server keeps, so the page can step
// back (Back, `b`, `←`) and scrub (a range input) through them. The slider never floods the
// server: at most one rewind is in flight, and when it lands the newest position asked for
// is sent next, so a drag always ends on where the thumb was let go.

import { entry } from "../catalogue.js";

const $ = (id) => document.getElementById(id);

/** The Python of a program entry, as the session's code panel shows it; one the program no
 * longer holds (it changed since) as the server's table writes it. */
export function python(session, name) {
  const i = session.program.indexOf(name);
  if (i >= 0 && session.code?.[i]) return session.code[i];
  return entry(name)?.python ?? name;
}

/**
 * `handlers`: back(), rewind(to) -> Promise (settles once the answer is shown),
 * list(id) -> Promise of GET timeline (only fetched when a position needs its label).
 */
export function createTimeline(handlers) {
  const els = { back: $("back"), slider: $("timeline"), where: $("timeline-where") };
  let session = null;
  let known = null; // the timeline list for this session, while no line changed it
  let generation = 0; // bumps when `known` goes stale, so a late answer is thrown away
  let pending = null; // the newest position asked for and not yet sent
  let inFlight = false;

  const oldest = () => known?.moments[0]?.n ?? 0;

  function label(n) {
    if (!session) return "";
    const of = `moment ${n} of ${session.moments}`;
    if (n === 0) return `${of} — the start`;
    let entry = null;
    if (n === session.moment) entry = session.last?.line ?? null;
    else entry = known?.moments.find((m) => m.n === n)?.line ?? null;
    return entry ? `${of} — after ${python(session, entry)}` : of;
  }

  function say(n) {
    const text = label(n);
    els.where.textContent = text;
    els.slider.setAttribute("aria-valuetext", text);
  }

  function sync() {
    if (!session) return;
    els.slider.min = String(oldest());
    els.slider.max = String(session.moments);
    // while the thumb is being dragged, it shows where the student is going, not the answer
    const dragging = inFlight || pending !== null;
    els.slider.setAttribute("aria-busy", String(dragging));
    if (!dragging) {
      els.slider.value = String(session.moment);
      say(session.moment);
    }
    els.slider.disabled = session.moments <= oldest(); // one moment: nowhere to go
    els.back.disabled = session.moment <= oldest();
  }

  /** The list of moments, fetched once per change of the timeline (a label needs it). */
  async function need() {
    if (!session || known) return;
    const id = session.id;
    const asked = generation;
    try {
      const list = await handlers.list(id);
      if (asked !== generation || session?.id !== id) return;
      known = list;
      sync();
      if (pending !== null || inFlight) say(Number(els.slider.value));
    } catch {
      // only labels and the oldest kept moment depend on it; the slider works without
    }
  }

  function pump() {
    if (inFlight || pending === null) return;
    const to = pending;
    pending = null;
    inFlight = true;
    handlers.rewind(to).finally(() => {
      inFlight = false;
      if (pending !== null) pump();
      else sync();
    });
  }

  els.back.addEventListener("click", () => handlers.back());
  els.slider.addEventListener("input", () => {
    const to = Number(els.slider.value);
    pending = to;
    els.slider.setAttribute("aria-busy", "true");
    say(to);
    need();
    pump();
  });
  for (const type of ["focus", "pointerdown"]) els.slider.addEventListener(type, need);

  return {
    els,
    /** `travelled`: the answer came from a rewind or back, so the list of moments still holds. */
    render(next, travelled = false) {
      if (!travelled || next.id !== session?.id) {
        known = null;
        generation += 1;
      }
      session = next;
      sync();
    },
    /** What Back would do, for the keys `b` and `←`. */
    canGoBack: () => Boolean(session) && session.moment > oldest(),
    label,
  };
}
