// Actions: every request the stepper makes goes through one queue (queue.js), so two quick
// clicks never race. A refusal is shown beside its line in PyTorch's words; Run plays lines
// one after another until paused or refused.

import { api, ApiError } from "./api.js";
import { current } from "./paint.js";
import { createQueue } from "./queue.js";
import { setupOf, storeId } from "./state.js";
import { showProblem } from "./views/code.js";
import { describe } from "./views/controls.js";

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The Session, or null when the server has no such session (a 404 on the session itself). */
async function sessionOrNull(id) {
  try {
    return await api.get(id);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** `render` paints a Session, `controls` are the page's controls, `announce` speaks. */
export function createActions({ render, controls, announce }) {
  const enqueue = createQueue();
  let running = false;

  /**
   * Queue one request; render its Session; show a refusal (409) in PyTorch's words next to
   * its line. Resolves to true when the line ran, so Run knows when to stop. A `run` that
   * stops at a failing line has done the lines before it: `refetch` shows them, and the
   * message sits at the line where it stopped (the cursor). `sentence` may be a function of
   * the answer.
   */
  function perform(request, speak, sentence, fresh = false, clicked = undefined, refetch = false) {
    return enqueue(async () => {
      try {
        const next = await request();
        render(next, fresh, clicked);
        showProblem($("problem"), current.codePanel, null);
        if (speak && !running) {
          announce(typeof sentence === "function" ? sentence(next) : sentence ?? describe(next));
        }
        return true;
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        await recover(error, refetch);
        complain(error, clicked);
        return false;
      }
    });
  }

  /**
   * After a refusal: show what the server holds now. Sessions outlive restarts and idle
   * timeouts (they are read back from the store), so a 404 replaces the session only when
   * the session itself is gone; a server that does not answer (status 0) changes nothing;
   * a full disk (507) saved nothing, and the session is shown as the server has it.
   */
  async function recover(error, refetch = false) {
    const session = current.session;
    try {
      if (error.status === 404) {
        const kept = await sessionOrNull(session.id);
        if (kept) {
          render(kept);
        } else {
          const fresh = await api.create({ ...setupOf(session), lr: session.lr });
          storeId(fresh.id);
          render(fresh, true);
          error.message = "Your session had expired, so a new one was started.";
          error.line = null;
        }
      } else if ((refetch && error.status === 409) || error.status === 507) {
        // 507, the server's disk full: show the session as the server still holds it
        render(await api.get(session.id));
      }
    } catch (again) {
      if (!(again instanceof ApiError)) throw again;
      // e.g. the server went away meanwhile: say that, not the first refusal
      Object.assign(error, { status: again.status, line: null, heading: again.heading });
      error.message = again.message;
    }
  }

  /** Stop running, show the refusal beside its line and say it. */
  function complain(error, clicked) {
    pause();
    showProblem($("problem"), current.codePanel, error, clicked);
    const head = error.line ? `${error.line} failed: ` : error.heading ? `${error.heading} ` : "";
    announce(`${head}${error.message}`);
  }

  async function play() {
    if (running) return;
    running = true;
    controls.running(true);
    announce("Running.");
    while (running) {
      const t0 = performance.now();
      const whole = controls.els.speed.value === "iter";
      const id = current.session.id;
      const ok = await perform(() => (whole ? api.run(id, 1) : api.next(id)), false,
        undefined, false, undefined, whole);
      if (!ok) break;
      const interval = whole ? 100 : 1000 / Number(controls.els.speed.value);
      await sleep(Math.max(0, interval - (performance.now() - t0)));
    }
    pause();
  }

  function pause() {
    if (!running) return;
    running = false;
    controls.running(false);
    const loss = current.session.loss === null ? "None" : current.session.loss;
    const said = typeof loss === "number" ? Number(loss.toPrecision(4)) : loss;
    announce(`Paused at iteration ${current.session.iteration}, loss ${said}.`);
  }

  return {
    enqueue, perform, recover, complain, play, pause,
    toggleRun: () => (running ? pause() : play()),
    get running() { return running; },
  };
}
