// The only place that talks HTTP. Every call resolves to parsed JSON or throws an ApiError
// carrying the status and the server's `detail` (PyTorch's own words for a 409).
// Paths are relative to the page ("api/...", never "/api/..."), so the page also works
// under a reverse proxy's prefix (https://ml.school.edu/loop-stepper/).

import { entry } from "./catalogue.js";
import { Held } from "./changes.js";

/** A 422's detail is a list of pydantic errors: say each as "where: what". */
function words(detail) {
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((d) => `${(d.loc ?? []).filter((part) => part !== "body").join(" ")}: ${d.msg}`)
      .join("; ");
  }
  return JSON.stringify(detail);
}

export class ApiError extends Error {
  constructor(status, detail, line) {
    super(words(detail));
    this.status = status;
    this.detail = detail;
    this.line = line ?? null;
  }
}

// A page below the root (/l/{code}) sets this to "../": CSP's base-uri 'none' rules out <base>.
export const paths = { root: "" };

// A busy server (429: the session's queue is full; 503: the server's is) refused the request
// without running it, so sending the very same request again cannot double a click. A class
// of 300 all retrying at once would be refused again together: each waits a little longer
// each time (exponential backoff), at least what the server asked (Retry-After, seconds),
// plus a random share (jitter) that spreads them out. Bounded: then the error shows as ever.
const BUSY = new Set([429, 503]);
export const RETRY = { attempts: 6, budget: 30_000, base: 500, cap: 8_000 };
const waiting = new Set(); // listeners told "busy, retrying" and then "done"
export const BUSY_WORDS = "Busy — retrying…"; // what the page says meanwhile (its live region)

/** `listener({attempt, wait})` before each retry, `listener(null)` once the retried call ends. */
export function onBusy(listener) {
  waiting.add(listener);
  return () => waiting.delete(listener);
}

function tell(news) {
  for (const listener of waiting) listener(news);
}

/** Milliseconds before attempt `attempt + 1`: backoff, never less than Retry-After, jittered. */
function backoff(response, attempt) {
  const header = response.headers.get("retry-after")?.trim() ?? "";
  const asked = /^\d+$/.test(header) ? Number(header) * 1000 : 0; // an HTTP date: backoff alone
  const wait = Math.max(asked, Math.min(RETRY.cap, RETRY.base * 2 ** (attempt - 1)));
  return wait * (1 + Math.random() / 2);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function send(url, init) {
  try {
    return await fetch(url, init);
  } catch {
    // no answer at all (the server restarting, the network gone): status 0, said in words,
    // so the page shows it and keeps its session rather than starting a new one. Never
    // retried here: the request may have run.
    const error = new ApiError(0, "nothing was lost: try again in a moment (it may be restarting).");
    error.heading = "The server did not answer:";
    throw error;
  }
}

/** One request; with `retry`, sent again (the same method, URL and body) while the server is
 * busy; with `dropped`, sent once more when its connection dropped without an answer (a line
 * carrying the moment it makes: the server does not run it twice). */
async function call(method, path, body, retry = false, dropped = false, headers = {}) {
  const init = { method, headers: { accept: "application/json", ...headers } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const started = Date.now();
  let response;
  for (let attempt = 1; ; attempt += 1) {
    try {
      response = await send(paths.root + path, init);
    } catch (error) {
      if (dropped) { // once: the line's moment makes the second send safe
        dropped = false;
        attempt -= 1;
        continue;
      }
      if (attempt > 1) tell(null);
      throw error;
    }
    if (attempt > 1 && !BUSY.has(response.status)) tell(null);
    if (!retry || !BUSY.has(response.status)) break;
    const wait = backoff(response, attempt);
    if (attempt >= RETRY.attempts || Date.now() - started + wait > RETRY.budget) {
      if (attempt > 1) tell(null); // given up: the error shows as it would have
      break;
    }
    tell({ attempt, wait });
    await sleep(wait);
  }
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    // a proxy's HTML error page: report the status rather than a JSON parse error
  }
  if (!response.ok) {
    throw new ApiError(response.status, data?.detail ?? response.statusText, data?.line);
  }
  return data;
}

const session = (id) => `api/sessions/${encodeURIComponent(id)}`;

// Loss history arrives piecemeal: an answer carries only the points this page has not seen
// (?since=n, numbered by the server), so a click does not fetch up to 1000 points again.
// They are merged here, so every view still gets the whole history in session.history.
const KEPT = 1000; // the server keeps the newest 1000
const histories = new Map(); // session id -> loss points, oldest first

function since(id) {
  const known = histories.get(id);
  return known?.length ? known[known.length - 1].n + 1 : 0;
}

// the newest moment each session was answered at: a line is sent with the moment it makes
const moments = new Map(); // session id -> moment

// What this page holds of each session: an answer leaves out the stores equal to the ones the
// request said it held (?held=), and is made whole here (changes.js), so a line on a model of
// one's own does not fetch every summary again.
const held = new Held();

/** An answer made whole: the stores it left out as `sent` had them, the history merged. */
function merge(s, sent) {
  if (s?.id && sent !== undefined) s = held.take(s.id, s, sent);
  if (s?.id && Number.isInteger(s.moment)) moments.set(s.id, s.moment);
  if (!s?.id || !Array.isArray(s.history)) return s;
  const from = s.history.length ? s.history[0].n : s.losses;
  // points numbered past `losses` are from before a reset
  const kept = (histories.get(s.id) ?? []).filter((p) => p.n < from && p.n < s.losses);
  s.history = kept.concat(s.history).slice(-KEPT);
  histories.set(s.id, s.history);
  return s;
}

/** A new session's answer: the page holds it as the session's start (?held=start). */
function created(s) {
  const whole = merge(s);
  if (whole?.id) held.keep(whole.id, "start", whole);
  return whole;
}

/** The query of a call on one session: the history and the stores this page holds. */
function holding(id) {
  const sent = held.held(id);
  return [`?since=${since(id)}&held=${sent}`, sent];
}

/** A call on one session that answers with the Session: only new history and the stores that
 * changed, merged. Every one changes the session (or reads it), and a busy server ran none of
 * them: retried. */
async function onSession(method, id, suffix = "", body) {
  const [query, sent] = holding(id);
  return merge(await call(method, `${session(id)}${suffix}${query}`, body, true), sent);
}

/** A line (or Next line): with the moment it makes, sent again if its answer never came. */
async function onLine(id, suffix, body) {
  const at = moments.get(id);
  const moment = at === undefined ? "" : `&moment=${at + 1}`;
  const [query, sent] = holding(id);
  const url = `${session(id)}${suffix}${query}${moment}`;
  return merge(await call("POST", url, body, true, moment !== ""), sent);
}

export const api = {
  create: async (setup) => created(await call("POST", "api/sessions", setup, true)),
  get: (id) => onSession("GET", id),
  patch: (id, changes) => onSession("PATCH", id, "", changes),
  line: (id, name) => {
    // the entry's Lab method is its endpoint; its keyword arguments, if any, the body
    const e = entry(name) ?? { method: name, arguments: {} };
    const body = Object.keys(e.arguments).length ? e.arguments : undefined;
    return onLine(id, `/${e.method}`, body);
  },
  next: (id) => onLine(id, "/next"),
  run: (id, iterations) => onSession("POST", id, "/run", { iterations }),
  reset: (id) => onSession("POST", id, "/reset"),
  remove: (id) => {
    histories.delete(id);
    held.forget(id);
    return call("DELETE", session(id));
  },
  // the timeline (issue 9): every answer is the Session as it stood at that moment
  rewind: (id, to) => onSession("POST", id, "/rewind", { to }),
  back: (id) => onSession("POST", id, "/back"),
  timeline: (id) => call("GET", `${session(id)}/timeline`),
  // predict first and explain a number (issue 17)
  question: (id) => call("GET", `${session(id)}/question`),
  predict: async (id, choice) => {
    const [query, sent] = holding(id);
    const answer = await call("POST", `${session(id)}/predict${query}`, { choice });
    if (answer.session) answer.session = merge(answer.session, sent);
    return answer;
  },
  score: (id) => call("GET", `${session(id)}/score`),
  explain: (id, param, index) =>
    call("GET", `${session(id)}/explain?param=${encodeURIComponent(param)}&index=${index}`),
  // a page of a big tensor's exact elements (issue 28): {store, name, key?, start, stop}
  tensor: (id, query) => call("GET", `${session(id)}/tensor?${new URLSearchParams(query)}`, undefined, true),
  snapshot: (id) => call("POST", `${session(id)}/snapshot`),
  open: async (token) => created(await call("POST", "api/sessions", { snapshot: token }, true)),
  /** Where the session's code downloads from (links, not fetches: the browser saves them). */
  scriptUrl: (id, format) => `${session(id)}/script${format ? `?format=${format}` : ""}`,
  // your own model (issue 28): a spec checked dry, a CSV file kept as a dataset
  check: (body) => call("POST", "api/models/check", body, true),
  upload: async (bytes) => {
    const response = await send(`${paths.root}api/datasets`, {
      method: "POST", headers: { "content-type": "text/csv", accept: "application/json" }, body: bytes,
    });
    const data = await response.json().catch(() => null);
    if (!response.ok) throw new ApiError(response.status, data?.detail ?? response.statusText);
    return data;
  },
  // prepared lessons (issue 29)
  lessonSession: async (lesson) =>
    created(await call("POST", `api/lessons/${encodeURIComponent(lesson)}/sessions`, undefined, true)),
  nextStop: (id) => onSession("POST", id, "/lesson/next-stop"),
  lessonAnswer: (id, stop, choices) => call("POST", `${session(id)}/lesson/answer`, { stop, choices }),
  lessonScore: (id) => call("GET", `${session(id)}/lesson/score`),
  lessons: () => call("GET", "api/lessons", undefined, true),
  lesson: (lesson) => call("GET", `api/lessons/${encodeURIComponent(lesson)}`, undefined, true),
  lessonDraft: (id) => call("GET", `${session(id)}/lesson/draft`, undefined, true),
  checkLesson: (doc) => call("POST", "api/lessons/check", doc, true),
  /** A new lesson (-> {id, edit_token, url}), or with `saved` ({id, token}) its edit. */
  saveLesson: (doc, saved) => saved
    ? call("PUT", `api/lessons/${encodeURIComponent(saved.id)}`, doc, true, false,
      { authorization: `Bearer ${saved.token}` })
    : call("POST", "api/lessons", doc, true),
  output: (id, size = 30) => call("GET", `${session(id)}/output?size=${size}`),
  // the doctor (issue 37): the silent bugs of the session's loop so far -> {diagnoses: [...]}
  diagnoses: (id) => call("GET", `${session(id)}/diagnoses`),
  // lectures (issue 11): the session id drives, the join code only watches and answers
  startLecture: (id) => call("POST", `${session(id)}/lecture`),
  endLecture: (id) => call("DELETE", `${session(id)}/lecture`),
  ask: (id, choices) => call("POST", `${session(id)}/quiz`, { choices }),
  tally: (id) => call("GET", `${session(id)}/quiz`),
  reveal: (id) => call("POST", `${session(id)}/quiz/reveal`),
  selfAnswer: (id, choice) => call("POST", `${session(id)}/quiz/answer`, { choice }),
  createQuiz: async () => created(await call("POST", "api/sessions", { quiz: true }, true)),
  lecture: (code) => call("GET", `api/lectures/${encodeURIComponent(code)}`),
  answer: (code, choice, voter) =>
    call("POST", `api/lectures/${encodeURIComponent(code)}/answers`, voter ? { choice, voter } : { choice }),
  fork: (code) => call("POST", `api/lectures/${encodeURIComponent(code)}/fork`, undefined, true),
  // the class predicts the next line (issue 18): the instructor asks, the followers vote
  askClass: (id) => call("POST", `${session(id)}/lecture/question`),
  classCounts: (id) => call("GET", `${session(id)}/lecture/question`),
  voteAgain: (id) => call("POST", `${session(id)}/lecture/question/again`),
  predictVote: (code, choice, voter) =>
    call("POST", `api/lectures/${encodeURIComponent(code)}/predictions`, voter ? { choice, voter } : { choice }),
  reportUrl: (id) => `${session(id)}/lecture/report`,
  eventsUrl: (code) => `${paths.root}api/lectures/${encodeURIComponent(code)}/events?changes=1`,
};
