// The only place that talks HTTP. Every call resolves to parsed JSON or throws an ApiError
// carrying the status and the server's `detail` (PyTorch's own words for a 409).
// Paths are relative to the page ("api/...", never "/api/..."), so the page also works
// under a reverse proxy's prefix (https://ml.school.edu/loop-stepper/).

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

async function call(method, path, body) {
  const init = { method, headers: { accept: "application/json" } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(paths.root + path, init);
  } catch {
    // no answer at all (the server restarting, the network gone): status 0, said in words,
    // so the page shows it and keeps its session rather than starting a new one
    const error = new ApiError(0, "nothing was lost: try again in a moment (it may be restarting).");
    error.heading = "The server did not answer:";
    throw error;
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

function merge(s) {
  if (!s?.id || !Array.isArray(s.history)) return s;
  const from = s.history.length ? s.history[0].n : s.losses;
  // points numbered past `losses` are from before a reset
  const kept = (histories.get(s.id) ?? []).filter((p) => p.n < from && p.n < s.losses);
  s.history = kept.concat(s.history).slice(-KEPT);
  histories.set(s.id, s.history);
  return s;
}

/** A call on one session that answers with the Session: only new history, merged. */
async function onSession(method, id, suffix = "", body) {
  return merge(await call(method, `${session(id)}${suffix}?since=${since(id)}`, body));
}

export const api = {
  scenarios: () => call("GET", "api/scenarios"),
  presets: () => call("GET", "api/presets"),
  create: async (setup) => merge(await call("POST", "api/sessions", setup)),
  get: (id) => onSession("GET", id),
  patch: (id, changes) => onSession("PATCH", id, "", changes),
  line: (id, entry) => {
    // a program entry is the Python it runs; the two with arguments carry them in the body
    if (entry === "zero_grad(set_to_none=False)") {
      return onSession("POST", id, "/zero_grad", { set_to_none: false });
    }
    if (entry === "backward(retain_graph=True)") {
      return onSession("POST", id, "/backward", { retain_graph: true });
    }
    return onSession("POST", id, `/${entry}`);
  },
  next: (id) => onSession("POST", id, "/next"),
  run: (id, iterations) => onSession("POST", id, "/run", { iterations }),
  reset: (id) => onSession("POST", id, "/reset"),
  remove: (id) => {
    histories.delete(id);
    return call("DELETE", session(id));
  },
  // the timeline (issue 9): every answer is the Session as it stood at that moment
  rewind: (id, to) => onSession("POST", id, "/rewind", { to }),
  back: (id) => onSession("POST", id, "/back"),
  timeline: (id) => call("GET", `${session(id)}/timeline`),
  snapshot: (id) => call("POST", `${session(id)}/snapshot`),
  open: async (token) => merge(await call("POST", "api/sessions", { snapshot: token })),
  /** Where the session's code downloads from (links, not fetches: the browser saves them). */
  scriptUrl: (id, format) => `${session(id)}/script${format ? `?format=${format}` : ""}`,
  output: (id, size = 30) => call("GET", `${session(id)}/output?size=${size}`),
  // lectures (issue 11): the session id drives, the join code only watches and answers
  startLecture: (id) => call("POST", `${session(id)}/lecture`),
  endLecture: (id) => call("DELETE", `${session(id)}/lecture`),
  ask: (id, choices) => call("POST", `${session(id)}/quiz`, { choices }),
  tally: (id) => call("GET", `${session(id)}/quiz`),
  reveal: (id) => call("POST", `${session(id)}/quiz/reveal`),
  selfAnswer: (id, choice) => call("POST", `${session(id)}/quiz/answer`, { choice }),
  createQuiz: async () => merge(await call("POST", "api/sessions", { quiz: true })),
  lecture: (code) => call("GET", `api/lectures/${encodeURIComponent(code)}`),
  answer: (code, choice, voter) =>
    call("POST", `api/lectures/${encodeURIComponent(code)}/answers`, voter ? { choice, voter } : { choice }),
  fork: (code) => call("POST", `api/lectures/${encodeURIComponent(code)}/fork`),
  // the class predicts the next line (issue 18): the instructor asks, the followers vote
  askClass: (id) => call("POST", `${session(id)}/lecture/question`),
  classCounts: (id) => call("GET", `${session(id)}/lecture/question`),
  voteAgain: (id) => call("POST", `${session(id)}/lecture/question/again`),
  predictVote: (code, choice, voter) =>
    call("POST", `api/lectures/${encodeURIComponent(code)}/predictions`, voter ? { choice, voter } : { choice }),
  reportUrl: (id) => `${session(id)}/lecture/report`,
  eventsUrl: (code) => `${paths.root}api/lectures/${encodeURIComponent(code)}/events`,
};
