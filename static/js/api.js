// The only place that talks HTTP. Every call resolves to parsed JSON or throws an ApiError
// carrying the status and the server's `detail` (PyTorch's own words for a 409).

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

async function call(method, path, body) {
  const init = { method, headers: { accept: "application/json" } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
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

const session = (id) => `/api/sessions/${encodeURIComponent(id)}`;

export const api = {
  scenarios: () => call("GET", "/api/scenarios"),
  presets: () => call("GET", "/api/presets"),
  create: (setup) => call("POST", "/api/sessions", setup),
  get: (id) => call("GET", session(id)),
  patch: (id, changes) => call("PATCH", session(id), changes),
  line: (id, entry) => {
    // a program entry is the Python it runs; the two with arguments carry them in the body
    if (entry === "zero_grad(set_to_none=False)") {
      return call("POST", `${session(id)}/zero_grad`, { set_to_none: false });
    }
    if (entry === "backward(retain_graph=True)") {
      return call("POST", `${session(id)}/backward`, { retain_graph: true });
    }
    return call("POST", `${session(id)}/${entry}`);
  },
  next: (id) => call("POST", `${session(id)}/next`),
  run: (id, iterations) => call("POST", `${session(id)}/run`, { iterations }),
  reset: (id) => call("POST", `${session(id)}/reset`),
  remove: (id) => call("DELETE", session(id)),
  output: (id, size = 30) => call("GET", `${session(id)}/output?size=${size}`),
};
