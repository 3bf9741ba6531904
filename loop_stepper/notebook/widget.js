/* loop-stepper bundle: sha256 53f6265cca0b3e0e6eec42156cfd62043dd5e59fe5e433b294e1be43a3a17201 of static/js/api.js static/js/catalogue.js static/js/changes.js static/js/format.js static/js/views/chart.js static/js/views/grads.js static/js/views/graph.js static/js/views/layout.js static/js/views/loss.js static/js/views/marks.js static/js/views/optstate.js static/js/views/params.js static/js/views/source.js static/js/views/stores.js static/js/views/summary.js static/js/views/tensor.js static/js/widget.js */
// static/js/views/source.js
function createSource(root, source) {
  let list = document.createElement("ol");
  list.className = "source", list.setAttribute("aria-label", "The cell's source"), list.tabIndex = 0;
  let items = source.replace(/\n$/, "").split(`
`).map((text, i) => {
    let item = document.createElement("li");
    item.dataset.line = String(i + 1);
    let code = document.createElement("code");
    return code.textContent = text || " ", item.append(code), list.append(item), item;
  });
  return root.replaceChildren(list), function(first, last) {
    items.forEach((item, i) => {
      let on = first !== null && i + 1 >= first && i + 1 <= last;
      item.classList.toggle("ran", on), on && i + 1 === first ? item.setAttribute("aria-current", "step") : item.removeAttribute("aria-current");
    });
    let at = first === null ? null : items[first - 1];
    at && (at.offsetTop < list.scrollTop || at.offsetTop > list.scrollTop + list.clientHeight - 20) && (list.scrollTop = Math.max(0, at.offsetTop - list.clientHeight / 3));
  };
}

// static/js/format.js
var NON_FINITE = { NaN: "nan", Infinity: "inf", "-Infinity": "-inf" };
function toNumber(v) {
  return typeof v == "number" ? v : v === "NaN" ? NaN : v === "Infinity" ? 1 / 0 : -1 / 0;
}
function exact(v, dtype = "float64") {
  if (typeof v != "number") return NON_FINITE[v] ?? String(v);
  if (dtype === "float32") {
    let target = Math.fround(v);
    for (let p = 1; p <= 9; p++) {
      let s = Number(target.toPrecision(p));
      if (Math.fround(s) === target) return String(s);
    }
  }
  return String(v);
}
function short(v, dtype = "float64", digits = 4) {
  if (typeof v != "number") return NON_FINITE[v] ?? String(v);
  let full = exact(v, dtype);
  if (full.replace(/^-|\.|e.*$/g, "").replace(/^0+/, "").length <= digits) return full;
  let a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(digits - 1) : String(Number(v.toPrecision(digits)));
}
function display(v, dtype = "float64") {
  return short(v, dtype, dtype === "float32" ? 6 : 5);
}
function exactTitle(v, dtype = "float64") {
  return typeof v != "number" ? String(v) : `${exact(v, dtype)} as ${dtype} (exactly ${v})`;
}
function cells(nested, index = []) {
  return Array.isArray(nested) ? nested.flatMap((item, i) => cells(item, [...index, i])) : [[nested, index]];
}
function sameValue(a, b) {
  return a === b || Number.isNaN(toNumber(a)) && Number.isNaN(toNumber(b));
}

// static/js/views/chart.js
var SVG = "http://www.w3.org/2000/svg", W = 340, H = 190, L = 46, R = 10, T = 10, B = 24, MAX_DOTS = 150, clips = 0;
function svg(tag, attrs = {}, text) {
  let e = document.createElementNS(SVG, tag);
  for (let [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return text !== void 0 && (e.textContent = text), e;
}
var tick = (v) => exact(Number(v.toPrecision(3)));
function linePath(points, x, y) {
  let d = "", pen = "M";
  for (let [px, py] of points) {
    let v = toNumber(py);
    if (!Number.isFinite(v)) {
      pen = "M";
      continue;
    }
    d += `${pen}${x(px).toFixed(1)},${y(v).toFixed(1)}`, pen = "L";
  }
  return d;
}
function createChart(root, { xLabel = "iteration", cls = "" } = {}) {
  let chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: `series-chart ${cls}`, role: "img" }), clipId = `chart-clip-${++clips}`;
  return root.append(chart), function({ series, marks = [], xRange, include = [], floor, aria }) {
    let xs = [], ys = [...include];
    for (let s of series)
      for (let [px, py] of s.points)
        xs.push(px), s.soft || ys.push(toNumber(py));
    for (let m of marks) ys.push(m.y);
    let finite = ys.filter(Number.isFinite), [x0, x1] = xRange ?? [xs.length ? Math.min(...xs) : 0, Math.max(1, ...xs)];
    x1 <= x0 && (x1 = x0 + 1);
    let y0 = finite.length ? Math.min(...finite) : 0, y1 = finite.length ? Math.max(...finite) : 1, pad = (y1 - y0) * 0.08 || Math.abs(y0) * 0.1 || 1;
    y0 = floor !== void 0 && y0 >= floor ? floor : y0 - pad, y1 += pad;
    let x = (v) => L + (v - x0) / (x1 - x0) * (W - L - R), y = (v) => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B), clip = svg("clipPath", { id: clipId });
    clip.append(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B })), chart.replaceChildren(
      clip,
      svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }),
      svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }),
      svg("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "tick" }, tick(y1)),
      svg("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "tick" }, tick(y0)),
      svg("text", { x: L, y: H - 6, class: "tick" }, String(Math.round(x0))),
      svg("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "tick" }, `${xLabel} ${Math.round(x1)}`)
    );
    let plot = svg("g", { "clip-path": `url(#${clipId})` });
    for (let m of marks)
      Number.isFinite(m.y) && (plot.append(svg("line", { x1: L, y1: y(m.y), x2: W - R, y2: y(m.y), class: `mark ${m.cls ?? ""}` })), m.label && plot.append(svg("text", { x: W - R - 2, y: y(m.y) - 3, "text-anchor": "end", class: `tick mark-label ${m.cls ?? ""}` }, m.label)));
    for (let s of series)
      if (plot.append(svg("path", { d: linePath(s.points, x, y), class: `series ${s.cls}` })), s.dots && s.points.length <= MAX_DOTS) {
        let dots = svg("g", { class: `dots ${s.cls}` });
        for (let [px, py] of s.points) {
          let v = toNumber(py);
          Number.isFinite(v) && dots.append(svg("circle", { cx: x(px).toFixed(1), cy: y(v).toFixed(1), r: 2.8 }));
        }
        plot.append(dots);
      }
    chart.append(plot), chart.setAttribute("aria-label", aria ?? "");
  };
}

// static/js/views/layout.js
function layers(nodes, edges) {
  let parents = new Map(nodes.map((n) => [n.id, []]));
  for (let e of edges) parents.get(e.target)?.push(e.source);
  let depth = /* @__PURE__ */ new Map(), visit = (id, seen = /* @__PURE__ */ new Set()) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    let ps = parents.get(id) ?? [], d = ps.length ? 1 + Math.max(...ps.map((p) => visit(p, seen))) : 0;
    return depth.set(id, d), d;
  };
  nodes.forEach((n) => visit(n.id));
  let rows = [];
  nodes.forEach((n) => {
    var _a;
    return (rows[_a = depth.get(n.id)] ?? (rows[_a] = [])).push(n.id);
  });
  let position = /* @__PURE__ */ new Map();
  return rows.forEach((row, r) => {
    if (r > 0) {
      let key = (id) => {
        let ps = parents.get(id).map((p) => position.get(p)).filter((x) => x !== void 0);
        return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : 0;
      };
      row.sort((a, b) => key(a) - key(b));
    }
    row.forEach((id, i) => position.set(id, i - (row.length - 1) / 2));
  }), { rows, position, depth };
}
function place(nodes, edges, { charWidth = 7, height = 26, gapX = 14, gapY = 22 } = {}) {
  let { rows } = layers(nodes, edges), byId = new Map(nodes.map((n) => [n.id, n])), width = (id) => byId.get(id).label.length * charWidth + 16, boxes = /* @__PURE__ */ new Map(), maxWidth = 0;
  return rows.forEach((row) => {
    let total = row.reduce((s, id) => s + width(id), 0) + gapX * (row.length - 1);
    maxWidth = Math.max(maxWidth, total);
  }), rows.forEach((row, r) => {
    let total = row.reduce((s, id) => s + width(id), 0) + gapX * (row.length - 1), x = (maxWidth - total) / 2;
    for (let id of row)
      boxes.set(id, { x, y: r * (height + gapY), w: width(id), h: height }), x += width(id) + gapX;
  }), { boxes, width: maxWidth, height: rows.length * (height + gapY) - gapY };
}

// static/js/views/graph.js
var STATUS = {
  empty: "empty: no graph yet (forward builds one)",
  built: "built: backward can walk it",
  freed: "freed: backward released its saved tensors; a second backward fails"
};
function createGraph(root) {
  let status = document.createElement("p");
  status.className = "graph-status";
  let figure = document.createElement("div");
  figure.className = "graph-figure", root.replaceChildren(status, figure);
  let drawn = "", scrolls = () => {
    let on = figure.scrollWidth > figure.clientWidth + 1;
    if (on !== figure.hasAttribute("tabindex"))
      for (let [key, value] of [["tabindex", "0"], ["role", "group"], ["aria-label", "Graph, scrolls sideways"]])
        on ? figure.setAttribute(key, value) : figure.removeAttribute(key);
  };
  return new ResizeObserver(scrolls).observe(figure), function(session2) {
    let graph = session2.graph, half = (n) => n.dtype === "bfloat16" || n.dtype === "float16", g = { ...graph, nodes: graph.nodes.map((n) => half(n) ? { ...n, label: `${n.label} \xB7 ${n.dtype}` } : n) };
    status.dataset.status = g.status, status.innerHTML = `Status: <strong class="status-word">${g.status}</strong> <span>${STATUS[g.status].slice(g.status.length + 1)}</span>`, root.dataset.status = g.status;
    let key = JSON.stringify([g.nodes, g.edges]);
    if (key === drawn) return;
    if (drawn = key, !g.nodes.length) {
      figure.replaceChildren();
      return;
    }
    let { boxes, width, height } = place(g.nodes, g.edges), pad = 4, root_ = svg("svg", {
      viewBox: `${-pad} ${-pad} ${width + 2 * pad} ${height + 2 * pad}`,
      width: width + 2 * pad,
      role: "img",
      "aria-label": `Autograd graph, ${g.nodes.length} nodes: ${g.nodes.map((n) => n.label).join(", ")}`
    }), defs = svg("defs"), marker = svg("marker", {
      id: "arrow",
      viewBox: "0 0 8 8",
      refX: 8,
      refY: 4,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto-start-reverse"
    });
    marker.append(svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrowhead" })), defs.append(marker), root_.append(defs);
    for (let e of g.edges) {
      let a = boxes.get(e.source), b = boxes.get(e.target);
      if (!a || !b) continue;
      let x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y, my = (y1 + y2) / 2;
      root_.append(svg("path", {
        d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`,
        class: "edge",
        "marker-end": "url(#arrow)"
      }));
    }
    for (let n of g.nodes) {
      let b = boxes.get(n.id), leaf = n.label.startsWith("AccumulateGrad"), group = svg("g", { class: `node${leaf ? " leaf" : ""}`, "data-id": n.id });
      group.append(svg("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: leaf ? 2 : 9 }));
      let text = svg("text", { x: b.x + b.w / 2, y: b.y + b.h / 2 + 4, "text-anchor": "middle" });
      text.textContent = n.label, group.append(text), root_.append(group);
    }
    root_.style.setProperty("--natural", String(width + 2 * pad)), figure.replaceChildren(root_), scrolls();
  };
}

// static/js/catalogue.js
var read = null;
function catalogue() {
  return read ?? (read = JSON.parse(document.getElementById("catalogue").textContent)), read;
}
var entries = () => catalogue().entries, entry = (name) => entries().find((e) => e.name === name);

// static/js/changes.js
function restore(answer, held2) {
  if (!answer || !Array.isArray(answer.unchanged)) return answer;
  if (!held2) throw new Error("an answer left out stores this page does not hold");
  let whole = { ...answer };
  delete whole.unchanged, whole.params = answer.params ? answer.params.map((entry2, i) => ({ ...held2.params[i], ...entry2 })) : held2.params;
  for (let store of answer.unchanged)
    store !== "params" && store !== "grad" && store in held2 && (whole[store] = held2[store]);
  return whole;
}
var Held = class {
  constructor(kept = 4) {
    this.kept = kept, this.sessions = /* @__PURE__ */ new Map();
  }
  /** What a request on session `id` says it holds: the newest version, else "none". */
  held(id) {
    let answers = this.sessions.get(id);
    return answers?.size ? [...answers.keys()].at(-1) : "none";
  }
  /** `answer` (to a request that sent `sent`) made whole, and kept under its version. */
  take(id, answer, sent) {
    let whole = restore(answer, this.sessions.get(id)?.get(sent));
    return whole?.version && this.keep(id, whole.version, whole), whole;
  }
  /** Keep `session` as what `version` names for session `id` ("start": its creation's answer). */
  keep(id, version, session2) {
    let answers = this.sessions.get(id) ?? /* @__PURE__ */ new Map();
    for (answers.delete(version), answers.set(version, session2); answers.size > this.kept; ) answers.delete(answers.keys().next().value);
    this.sessions.set(id, answers);
  }
  forget(id) {
    this.sessions.delete(id);
  }
};

// static/js/api.js
function words(detail) {
  return typeof detail == "string" ? detail : Array.isArray(detail) ? detail.map((d) => `${(d.loc ?? []).filter((part) => part !== "body").join(" ")}: ${d.msg}`).join("; ") : JSON.stringify(detail);
}
var ApiError = class extends Error {
  constructor(status, detail, line) {
    super(words(detail)), this.status = status, this.detail = detail, this.line = line ?? null;
  }
}, paths = { root: "" }, BUSY = /* @__PURE__ */ new Set([429, 503]), RETRY = { attempts: 6, budget: 3e4, base: 500, cap: 8e3 }, waiting = /* @__PURE__ */ new Set();
function tell(news) {
  for (let listener of waiting) listener(news);
}
function backoff(response, attempt) {
  let header = response.headers.get("retry-after")?.trim() ?? "", asked = /^\d+$/.test(header) ? Number(header) * 1e3 : 0;
  return Math.max(asked, Math.min(RETRY.cap, RETRY.base * 2 ** (attempt - 1))) * (1 + Math.random() / 2);
}
var sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function send(url, init) {
  try {
    return await fetch(url, init);
  } catch {
    let error = new ApiError(0, "nothing was lost: try again in a moment (it may be restarting).");
    throw error.heading = "The server did not answer:", error;
  }
}
async function call(method, path, body, retry = !1, dropped = !1, headers = {}) {
  let init = { method, headers: { accept: "application/json", ...headers } };
  body !== void 0 && (init.headers["content-type"] = "application/json", init.body = JSON.stringify(body));
  let started = Date.now(), response;
  for (let attempt = 1; ; attempt += 1) {
    try {
      response = await send(paths.root + path, init);
    } catch (error) {
      if (dropped) {
        dropped = !1, attempt -= 1;
        continue;
      }
      throw attempt > 1 && tell(null), error;
    }
    if (attempt > 1 && !BUSY.has(response.status) && tell(null), !retry || !BUSY.has(response.status)) break;
    let wait = backoff(response, attempt);
    if (attempt >= RETRY.attempts || Date.now() - started + wait > RETRY.budget) {
      attempt > 1 && tell(null);
      break;
    }
    tell({ attempt, wait }), await sleep(wait);
  }
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
  }
  if (!response.ok)
    throw new ApiError(response.status, data?.detail ?? response.statusText, data?.line);
  return data;
}
var session = (id) => `api/sessions/${encodeURIComponent(id)}`, KEPT = 1e3, histories = /* @__PURE__ */ new Map();
function since(id) {
  let known = histories.get(id);
  return known?.length ? known[known.length - 1].n + 1 : 0;
}
var moments = /* @__PURE__ */ new Map(), held = new Held();
function merge(s, sent) {
  if (s?.id && sent !== void 0 && (s = held.take(s.id, s, sent)), s?.id && Number.isInteger(s.moment) && moments.set(s.id, s.moment), !s?.id || !Array.isArray(s.history)) return s;
  let from = s.history.length ? s.history[0].n : s.losses, kept = (histories.get(s.id) ?? []).filter((p) => p.n < from && p.n < s.losses);
  return s.history = kept.concat(s.history).slice(-KEPT), histories.set(s.id, s.history), s;
}
function created(s) {
  let whole = merge(s);
  return whole?.id && held.keep(whole.id, "start", whole), whole;
}
function holding(id) {
  let sent = held.held(id);
  return [`?since=${since(id)}&held=${sent}`, sent];
}
async function onSession(method, id, suffix = "", body) {
  let [query, sent] = holding(id);
  return merge(await call(method, `${session(id)}${suffix}${query}`, body, !0), sent);
}
async function onLine(id, suffix, body) {
  let at = moments.get(id), moment = at === void 0 ? "" : `&moment=${at + 1}`, [query, sent] = holding(id), url = `${session(id)}${suffix}${query}${moment}`;
  return merge(await call("POST", url, body, !0, moment !== ""), sent);
}
var api = {
  create: async (setup) => created(await call("POST", "api/sessions", setup, !0)),
  get: (id) => onSession("GET", id),
  patch: (id, changes) => onSession("PATCH", id, "", changes),
  line: (id, name) => {
    let e = entry(name) ?? { method: name, arguments: {} }, body = Object.keys(e.arguments).length ? e.arguments : void 0;
    return onLine(id, `/${e.method}`, body);
  },
  next: (id) => onLine(id, "/next"),
  run: (id, iterations) => onSession("POST", id, "/run", { iterations }),
  reset: (id) => onSession("POST", id, "/reset"),
  remove: (id) => (histories.delete(id), held.forget(id), call("DELETE", session(id))),
  // the timeline (issue 9): every answer is the Session as it stood at that moment
  rewind: (id, to) => onSession("POST", id, "/rewind", { to }),
  back: (id) => onSession("POST", id, "/back"),
  timeline: (id) => call("GET", `${session(id)}/timeline`),
  // predict first and explain a number (issue 17)
  question: (id) => call("GET", `${session(id)}/question`),
  predict: async (id, choice) => {
    let [query, sent] = holding(id), answer = await call("POST", `${session(id)}/predict${query}`, { choice });
    return answer.session && (answer.session = merge(answer.session, sent)), answer;
  },
  score: (id) => call("GET", `${session(id)}/score`),
  explain: (id, param, index) => call("GET", `${session(id)}/explain?param=${encodeURIComponent(param)}&index=${index}`),
  // a page of a big tensor's exact elements (issue 28): {store, name, key?, start, stop}
  tensor: (id, query) => call("GET", `${session(id)}/tensor?${new URLSearchParams(query)}`, void 0, !0),
  snapshot: (id) => call("POST", `${session(id)}/snapshot`),
  open: async (token) => created(await call("POST", "api/sessions", { snapshot: token }, !0)),
  /** Where the session's code downloads from (links, not fetches: the browser saves them). */
  scriptUrl: (id, format) => `${session(id)}/script${format ? `?format=${format}` : ""}`,
  // your own model (issue 28): a spec checked dry, a CSV file kept as a dataset
  check: (body) => call("POST", "api/models/check", body, !0),
  upload: async (bytes) => {
    let response = await send(`${paths.root}api/datasets`, {
      method: "POST",
      headers: { "content-type": "text/csv", accept: "application/json" },
      body: bytes
    }), data = await response.json().catch(() => null);
    if (!response.ok) throw new ApiError(response.status, data?.detail ?? response.statusText);
    return data;
  },
  // prepared lessons (issue 29)
  lessonSession: async (lesson) => created(await call("POST", `api/lessons/${encodeURIComponent(lesson)}/sessions`, void 0, !0)),
  nextStop: (id) => onSession("POST", id, "/lesson/next-stop"),
  lessonAnswer: (id, stop, choices) => call("POST", `${session(id)}/lesson/answer`, { stop, choices }),
  lessonScore: (id) => call("GET", `${session(id)}/lesson/score`),
  lessons: () => call("GET", "api/lessons", void 0, !0),
  lesson: (lesson) => call("GET", `api/lessons/${encodeURIComponent(lesson)}`, void 0, !0),
  lessonDraft: (id) => call("GET", `${session(id)}/lesson/draft`, void 0, !0),
  checkLesson: (doc) => call("POST", "api/lessons/check", doc, !0),
  /** A new lesson (-> {id, edit_token, url}), or with `saved` ({id, token}) its edit. */
  saveLesson: (doc, saved) => saved ? call(
    "PUT",
    `api/lessons/${encodeURIComponent(saved.id)}`,
    doc,
    !0,
    !1,
    { authorization: `Bearer ${saved.token}` }
  ) : call("POST", "api/lessons", doc, !0),
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
  createQuiz: async () => created(await call("POST", "api/sessions", { quiz: !0 }, !0)),
  lecture: (code) => call("GET", `api/lectures/${encodeURIComponent(code)}`),
  answer: (code, choice, voter) => call("POST", `api/lectures/${encodeURIComponent(code)}/answers`, voter ? { choice, voter } : { choice }),
  fork: (code) => call("POST", `api/lectures/${encodeURIComponent(code)}/fork`, void 0, !0),
  // the class predicts the next line (issue 18): the instructor asks, the followers vote
  askClass: (id) => call("POST", `${session(id)}/lecture/question`),
  classCounts: (id) => call("GET", `${session(id)}/lecture/question`),
  voteAgain: (id) => call("POST", `${session(id)}/lecture/question/again`),
  predictVote: (code, choice, voter) => call("POST", `api/lectures/${encodeURIComponent(code)}/predictions`, voter ? { choice, voter } : { choice }),
  reportUrl: (id) => `${session(id)}/lecture/report`,
  eventsUrl: (code) => `${paths.root}api/lectures/${encodeURIComponent(code)}/events?changes=1`
};

// static/js/views/summary.js
var LISTED = 256, PAGE = 4096;
function colour(v, scale) {
  let x = toNumber(v);
  if (!Number.isFinite(x)) return "#000";
  let light = 97 - 52 * (scale > 0 ? Math.min(1, Math.abs(x) / scale) : 0);
  return x < 0 ? `hsl(212 70% ${light}%)` : `hsl(28 90% ${light}%)`;
}
function unravel(flat, shape) {
  let index = [];
  for (let k = shape.length - 1; k >= 0; k--)
    index.unshift(flat % shape[k]), flat = Math.floor(flat / shape[k]);
  return index;
}
var span = (starts, i, length) => [starts[i], starts[i + 1] ?? length];
function createSummary(body, label, dtype, where) {
  let stats = document.createElement("div");
  stats.className = "sumstats value";
  let map = document.createElement("div");
  map.className = "summap", map.tabIndex = 0, map.setAttribute("role", "img");
  let hist = document.createElement("div");
  hist.className = "sumhist", hist.setAttribute("role", "img");
  let readout = document.createElement("output");
  readout.className = "readout", readout.textContent = "a block: click, or focus and Enter, for its elements";
  let elements = document.createElement("div");
  elements.className = "sumelements", elements.setAttribute("aria-live", "polite"), elements.tabIndex = 0, elements.setAttribute("role", "region"), elements.setAttribute("aria-label", `${label}: a block's elements`), body.replaceChildren(stats, map, hist, readout, elements);
  let cellEls = [], grid = "", current = null, focus = 0, open = -1, asked = 0;
  function bounds(b) {
    let h = current.heatmap, cols = h.cols.length, [r0, r1] = span(h.rows, Math.floor(b / cols), h.shape[0]), [c0, c1] = span(h.cols, b % cols, h.shape[1]);
    return { r0, r1, c0, c1 };
  }
  function describe(b) {
    let { r0, r1, c0, c1 } = bounds(b), cell = current.heatmap.cells[Math.floor(b / current.heatmap.cols.length)][b % current.heatmap.cols.length];
    return `rows ${r0}\u2013${r1 - 1}, columns ${c0}\u2013${c1 - 1}: mean ${short(cell, "float64")}`;
  }
  function show(b) {
    focus = b, cellEls.forEach((c) => c.classList.remove("focus")), cellEls[b]?.classList.add("focus"), readout.textContent = `${label}, ${describe(b)}`;
  }
  async function list(b) {
    let { r0, r1, c0, c1 } = bounds(b), width = current.heatmap.shape[1], flat = [];
    for (let r = r0; r < r1 && flat.length < LISTED; r++)
      for (let c = c0; c < c1 && flat.length < LISTED; c++) flat.push(r * width + c);
    let total = (r1 - r0) * (c1 - c0), mine = ++asked, at = where?.();
    if (!at) {
      elements.textContent = "The exact elements are not kept: the summary is what a trace holds.";
      return;
    }
    let values = /* @__PURE__ */ new Map();
    try {
      let first = flat[0], last = flat[flat.length - 1] + 1;
      for (let start = first; start < last; start += PAGE) {
        let query = { store: at.store, name: at.name, start, stop: Math.min(last, start + PAGE) };
        at.key && (query.key = at.key);
        let page = await api.tensor(at.id, query);
        if (page.values === null) return;
        page.values.forEach((v, i) => values.set(page.start + i, v));
      }
    } catch (error) {
      mine === asked && (elements.textContent = error.message);
      return;
    }
    if (mine !== asked || open !== b) return;
    let head = document.createElement("div");
    head.className = "sumhead", head.textContent = `${label}, ${describe(b)}` + (total > flat.length ? ` (the first ${flat.length} of ${total} elements)` : "");
    let spans = flat.map((i) => {
      let v = values.get(i), s = document.createElement("span");
      return s.className = "value", s.dataset.index = unravel(i, current.shape).join(","), s.title = `[${s.dataset.index}] = ${exactTitle(v, dtype)}`, s.textContent = short(v, dtype), s;
    });
    elements.replaceChildren(head, ...spans);
  }
  function choose(b) {
    open = b, show(b), list(b);
  }
  return map.addEventListener("mouseover", (e) => {
    e.target.dataset.b && show(Number(e.target.dataset.b));
  }), map.addEventListener("click", (e) => {
    e.target.dataset.b && choose(Number(e.target.dataset.b));
  }), map.addEventListener("focus", () => show(focus)), map.addEventListener("keydown", (e) => {
    let cols = current.heatmap.cols.length, moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols };
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault(), e.stopPropagation(), choose(focus);
      return;
    }
    e.key in moves && (e.preventDefault(), e.stopPropagation(), show(Math.max(0, Math.min(cellEls.length - 1, focus + moves[e.key]))));
  }), function(summary, previous) {
    current = summary;
    let h = summary.heatmap, n = h.rows.length * h.cols.length, k = `${h.rows}/${h.cols}`;
    k !== grid && (map.style.gridTemplateColumns = `repeat(${h.cols.length}, var(--sumcell))`, cellEls = Array.from({ length: n }, (_, i) => {
      let c = document.createElement("span");
      return c.className = "bcell", c.dataset.b = String(i), c;
    }), map.replaceChildren(...cellEls), grid = k, focus = Math.min(focus, n - 1), open >= n && (open = -1));
    let flat = h.cells.flat(), before = previous?.summary ? previous.heatmap.cells.flat() : null, scale = 0;
    for (let v of flat) {
      let x = Math.abs(toNumber(v));
      Number.isFinite(x) && (scale = Math.max(scale, x));
    }
    flat.forEach((v, i) => {
      cellEls[i].style.background = colour(v, scale), cellEls[i].classList.toggle("changed", !!(before && before.length === n && before[i] !== v));
    }), map.dataset.scale = String(scale), map.setAttribute(
      "aria-label",
      `${label}, ${summary.shape.join(" by ")}, ${summary.numel} elements as ${h.rows.length} by ${h.cols.length} block means, largest |mean| ${short(scale, "float64")}. Arrow keys pick a block, Enter lists its elements.`
    ), stats.replaceChildren(
      ...[
        ["min", summary.min],
        ["max", summary.max],
        ["mean", summary.mean],
        ["std", summary.std],
        ["\u2016\xB7\u2016", summary.norm]
      ].map(([word, v]) => {
        let s = document.createElement("span");
        return s.dataset.stat = word === "\u2016\xB7\u2016" ? "norm" : word, s.title = exact(v, "float64"), s.textContent = `${word} ${short(v, "float64")}`, s;
      })
    );
    let counts = summary.histogram.counts, most = Math.max(1, ...counts);
    hist.replaceChildren(
      ...counts.map((c, i) => {
        let bar = document.createElement("span");
        return bar.style.height = `${100 * c / most}%`, bar.title = `${short(summary.histogram.edges[i], "float64")} to ${short(summary.histogram.edges[i + 1], "float64")}: ${c}`, bar;
      })
    );
    let edges = summary.histogram.edges;
    hist.setAttribute(
      "aria-label",
      `histogram from ${short(edges[0], "float64")} to ${short(edges[edges.length - 1], "float64")}: ` + counts.join(", ") + (summary.histogram.nonfinite ? `; ${summary.histogram.nonfinite} not finite` : "")
    ), open >= 0 && (show(open), list(open));
  };
}

// static/js/views/tensor.js
var SMALL = 4;
function heat(v, scale) {
  let x = toNumber(v);
  if (!Number.isFinite(x)) return "#000";
  let light = 97 - 52 * (scale > 0 ? Math.min(1, Math.abs(x) / scale) : 0);
  return x < 0 ? `hsl(212 70% ${light}%)` : `hsl(28 90% ${light}%)`;
}
function indexText(name, index) {
  return index.length ? `${name}[${index.join(", ")}]` : name;
}
function createTensor(name, shape, dtype, what, where = null) {
  let size = shape.reduce((a, b) => a * b, 1), el = document.createElement("div");
  el.className = "tensor", el.dataset.name = name;
  let label = document.createElement("div");
  label.className = "tname", label.innerHTML = `<code>${what === "grad" ? `${name}.grad` : name}</code> <span class="shape">${shape.length ? shape.join("\xD7") : "scalar"}</span>`;
  let body = document.createElement("div");
  body.className = "tbody", el.append(label, body);
  let big = size > SMALL, map = null, readout = null, cellEls = [], current = [], focusIndex = 0, show = () => {
  }, shown = -1, summarized = null, cols = shape.length >= 2 ? shape[shape.length - 1] : Math.max(1, size);
  function setupMap() {
    map = document.createElement("div"), map.className = "heatmap", map.tabIndex = 0, map.setAttribute("role", "img"), map.style.gridTemplateColumns = `repeat(${cols}, var(--cell))`, map.style.setProperty("--cols", String(cols)), readout = document.createElement("output"), readout.className = "readout", readout.textContent = matchMedia("(pointer: coarse)").matches ? "tap a cell for its exact value" : "hover or focus for exact values";
    let explain = document.createElement("button");
    explain.type = "button", explain.className = "small explain-cell", explain.hidden = !0;
    for (let i = 0; i < size; i++) {
      let c = document.createElement("span");
      c.className = "cell", c.dataset.i = String(i), map.append(c), cellEls.push(c);
    }
    show = (i) => {
      let [v, index] = current[i] ?? [];
      if (v === void 0) return;
      shown = i, cellEls.forEach((c) => c.classList.remove("focus")), cellEls[i].classList.add("focus");
      let where2 = indexText(what === "grad" ? `${name}.grad` : name, index);
      readout.textContent = `${where2} = ${exact(v, dtype)}`, explain.textContent = `Explain ${where2}`;
    }, map.addEventListener("mouseover", (e) => {
      e.target.dataset.i && show(Number(e.target.dataset.i));
    }), map.addEventListener("click", (e) => {
      e.target.dataset.i && (focusIndex = Number(e.target.dataset.i), show(focusIndex), what === "grad" && e.pointerType === "touch" && map.closest("[data-explain]") && (explain.hidden = !1));
    }), map.addEventListener("focus", () => show(focusIndex)), map.addEventListener("keydown", (e) => {
      let moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols };
      e.key in moves && (e.preventDefault(), e.stopPropagation(), focusIndex = Math.max(0, Math.min(size - 1, focusIndex + moves[e.key])), show(focusIndex));
    }), body.append(map, readout, explain);
  }
  function render2(value, previous) {
    if (value == null) {
      el.classList.add("none"), body.hidden = !0, label.querySelector(".none-word")?.remove();
      let none = document.createElement("span");
      none.className = "none-word value", none.textContent = "None", label.append(none), el.classList.toggle("changed-box", previous != null);
      return;
    }
    if (el.classList.remove("none"), label.querySelector(".none-word")?.remove(), body.hidden = !1, value.summary) {
      el.classList.toggle("changed-box", previous === null), summarized ?? (summarized = createSummary(body, what === "grad" ? `${name}.grad` : name, dtype, where)), summarized(value, previous);
      return;
    }
    current = cells(value);
    let before = previous == null ? null : cells(previous), changed = current.map(([v], i) => !before || !sameValue(v, before[i]?.[0]));
    if (el.classList.toggle("changed-box", previous === null && changed.length > 0), !big) {
      body.replaceChildren(
        ...current.map(([v, index], i) => {
          let span2 = document.createElement("span");
          return span2.className = "value", span2.dataset.index = index.join(","), span2.title = exactTitle(v, dtype), span2.textContent = display(v, dtype), before && changed[i] && span2.classList.add("changed"), span2;
        })
      );
      return;
    }
    map || setupMap();
    let scale = 0;
    for (let [v] of current) {
      let x = Math.abs(toNumber(v));
      Number.isFinite(x) && (scale = Math.max(scale, x));
    }
    current.forEach(([v], i) => {
      let c = cellEls[i];
      c.style.background = heat(v, scale), c.classList.toggle("changed", !!(before && changed[i]));
    });
    let nChanged = before ? changed.filter(Boolean).length : 0;
    map.setAttribute(
      "aria-label",
      `${name}${what === "grad" ? ".grad" : ""}, ${shape.join(" by ")}, largest |value| ${short(scale, dtype)}` + (nChanged ? `, ${nChanged} changed` : "") + ". Arrow keys read single values."
    ), map.dataset.scale = String(scale), shown >= 0 && show(shown);
  }
  return { el, render: render2, big };
}

// static/js/views/grads.js
function norm(grad) {
  let sum = 0;
  for (let v of [grad].flat(1 / 0)) sum += toNumber(v) ** 2;
  return Math.sqrt(sum);
}
function createGrads(root) {
  let views = null, bars = [], key = "", most = 0;
  return function(session2, previous) {
    let k = `${session2.id}:${session2.params.map((p) => `${p.name}:${p.shape}`).join()}`;
    if (k !== key) {
      let id = session2.id;
      views = session2.params.map(
        (p) => createTensor(p.name, p.shape, p.dtype, "grad", () => id ? { id, store: "grad", name: p.name } : null)
      ), bars = views.map((v) => {
        if (!v.big) return null;
        let bar = document.createElement("div");
        return bar.className = "normbar", bar.innerHTML = '<span class="fill"></span><span class="text"></span>', v.el.append(bar), bar;
      }), root.replaceChildren(...views.map((v) => v.el)), key = k, most = 0, previous = null;
    }
    session2.iteration === 0 && session2.params.every((p) => p.grad === null) && (most = 0), session2.params.forEach((p, i) => {
      views[i].render(p.grad, previous ? previous.params[i]?.grad : void 0);
      let bar = bars[i];
      if (!bar) return;
      if (p.grad === null) {
        bar.hidden = !0;
        return;
      }
      let n = p.grad.summary ? toNumber(p.grad.norm) : norm(p.grad);
      Number.isFinite(n) && (most = Math.max(most, n)), bar.hidden = !1, bar.querySelector(".fill").style.width = `${most > 0 ? Math.min(100, 100 * n / most) : 0}%`, bar.querySelector(".text").textContent = `\u2016grad\u2016 = ${exact(Number(n.toPrecision(4)))}`;
    });
  };
}

// static/js/views/loss.js
function createLoss(root, dtypeOf) {
  let value = document.createElement("p");
  value.className = "loss-value";
  let box = document.createElement("div");
  root.replaceChildren(value, box);
  let chart = createChart(box, { cls: "loss-chart" });
  return function(session2) {
    let dtype = dtypeOf(session2), text = session2.loss === null ? "None" : display(session2.loss, dtype);
    value.innerHTML = '<code>loss</code> = <span class="value" id="loss-value"></span>', value.querySelector(".value").textContent = text, session2.loss !== null && (value.querySelector(".value").title = exactTitle(session2.loss, dtype)), value.classList.toggle("none", session2.loss === null);
    let hist = session2.history, points = hist.map((p) => [p.iteration, p.loss]), bad = points.filter(([, v]) => !Number.isFinite(toNumber(v))).length;
    chart({
      // the curve, and the newest point as a dot: where the loss is now
      series: [{ cls: "loss", points }, { cls: "now", points: points.slice(-1), dots: !0 }],
      include: [0],
      floor: 0,
      aria: hist.length ? `Loss over ${hist.length} iterations, from ${display(hist[0].loss, dtype)} to ${display(hist[hist.length - 1].loss, dtype)}` + (bad ? `; ${bad} not finite` : "") : "No loss yet: run the loss line"
    });
  };
}

// static/js/views/marks.js
var IO_WORDS = { read: "read", write: "written", "read write": "read + written" };
function markStores(root, last) {
  let reads = new Set(last?.reads ?? []), writes = new Set(last?.writes ?? []);
  for (let section of root.querySelectorAll("[data-store]")) {
    let store = section.dataset.store, io = [reads.has(store) ? "read" : "", writes.has(store) ? "write" : ""].filter(Boolean).join(" ");
    section.dataset.io = io;
    let badge = section.querySelector(".io"), what = store === "data" ? "the batch " : "";
    badge && (badge.textContent = io ? `${what}${IO_WORDS[io]} by ${last.line}` : "");
  }
}

// static/js/views/optstate.js
var shapeOf = (v) => v?.summary ? v.shape : Array.isArray(v) ? [v.length, ...shapeOf(v[0])] : [];
function describeOptimizer(o) {
  if (o.title) return o.title;
  let decay = o.weight_decay ? `, weight_decay ${o.weight_decay}` : "";
  return o.kind === "adam" ? `Adam, betas (${o.betas.join(", ")})${decay}` : `SGD, momentum ${o.momentum}${decay}`;
}
function createOptState(section, root) {
  let note = section.querySelector(".opt-kind"), key = "", groups = [];
  return function(session2, previous) {
    let on = session2.optimizer.stateful;
    if (section.hidden = !on, !on) return;
    note.textContent = describeOptimizer(session2.optimizer);
    let dtype = session2.params[0]?.dtype ?? "float64", k = session2.id + JSON.stringify(session2.optimizer_state.map((p) => [p.name, Object.entries(p.state).map(([name, v]) => [name, shapeOf(v)])]));
    k !== key && (groups = session2.optimizer_state.map((p) => {
      let el = document.createElement("div");
      el.className = "pstate", el.dataset.param = p.name;
      let head = document.createElement("div");
      head.className = "pstate-head", head.innerHTML = "<code></code>", head.firstChild.textContent = `optimizer.state[${p.name}]`, el.append(head);
      let names = Object.keys(p.state);
      if (!names.length) {
        let empty = document.createElement("span");
        empty.className = "none-word value", empty.textContent = "empty", head.append(" ", empty);
      }
      let views = names.map((name) => {
        let where = () => session2.id ? { id: session2.id, store: "state", name: p.name, key: name } : null, view = createTensor(name, shapeOf(p.state[name]), dtype, "value", where);
        return el.append(view.el), [name, view];
      });
      return { el, views };
    }), root.replaceChildren(...groups.map((g) => g.el)), key = k, previous = null), session2.optimizer_state.forEach((p, i) => {
      let before = previous?.optimizer_state[i]?.state;
      for (let [name, view] of groups[i].views)
        view.render(p.state[name], before ? before[name] : void 0);
    }), section.querySelector(".opt-step")?.replaceChildren(
      `${session2.optimizer_state.every((p) => !Object.keys(p.state).length) ? "Empty until the first step" : "Kept between steps"}; step reads and writes it, zero_grad never touches it.`
    );
  };
}

// static/js/views/params.js
function createParams(root) {
  let views = null, key = "", id = "";
  return function(session2, previous) {
    id = session2.id;
    let k = session2.params.map((p) => `${p.name}:${p.shape}`).join();
    k !== key && (views = session2.params.map(
      (p) => createTensor(p.name, p.shape, p.dtype, "value", () => id ? { id, store: "params", name: p.name } : null)
    ), root.replaceChildren(...views.map((v) => v.el)), key = k, previous = null), session2.params.forEach((p, i) => views[i].render(p.value, previous?.params[i]?.value));
  };
}

// static/js/views/stores.js
var MARKUP = `
    <section aria-label="Parameters" class="panel store" data-store="params">
      <h2>Parameters <code>\u03B8</code> <span class="io"></span></h2><div class="body w-params"></div></section>
    <section aria-label="Gradients" class="panel store" data-store="grad">
      <h2>Gradients <code>.grad</code> <span class="io"></span></h2><div class="body w-grads"></div></section>
    <section aria-label="Graph" class="panel store" data-store="graph">
      <h2>Graph <span class="io"></span></h2><div class="body w-graph"></div></section>
    <section aria-label="Loss" class="panel store" data-store="loss">
      <h2>Loss <span class="io"></span></h2><div class="body w-loss"></div></section>
    <section aria-label="Optimizer state" class="panel store w-opt" data-store="optimizer_state" hidden>
      <h2>Optimizer state <span class="opt-kind"></span> <span class="io"></span></h2>
      <p class="opt-step"></p><div class="body w-optstate"></div></section>`;
function createStores(root) {
  root.innerHTML = MARKUP;
  let $ = (cls) => root.querySelector(`.${cls}`), views = {
    params: createParams($("w-params")),
    grads: createGrads($("w-grads")),
    graph: createGraph($("w-graph")),
    loss: createLoss($("w-loss"), (s) => s.params[0]?.dtype ?? "float64"),
    optstate: createOptState($("w-opt"), $("w-optstate"))
  };
  return function(session2, previous) {
    views.params(session2, previous), views.grads(session2, previous), views.graph(session2), views.loss(session2), views.optstate(session2, previous), markStores(root, session2.last);
  };
}

// static/js/widget.js
var MARKUP2 = `
  <div class="ls-controls controls" role="group" aria-label="Step through the recorded cell">
    <button type="button" class="ls-back" aria-keyshortcuts="b ArrowLeft">Back</button>
    <button type="button" class="ls-next" aria-keyshortcuts="n ArrowRight">Next line</button>
    <label class="ls-slider">Timeline
      <input type="range" class="ls-timeline" min="0" max="0" value="0" step="1"></label>
    <output class="ls-where" aria-live="polite"></output>
  </div>
  <p class="ls-ended hint"></p>
  <div class="ls-diagnoses" aria-live="polite"></div>
  <div class="ls-layout">
    <section class="panel code-panel ls-code" aria-label="The cell">
      <h2><span class="ls-title">The cell</span> <span class="ls-iteration"></span></h2>
      <div class="ls-source"></div></section>
    <div class="stores"></div>
  </div>`;
function unpack(trace, k, history) {
  let part = (i) => trace.parts[i], m = k === 0 ? null : trace.moments[k - 1], params = m ? m.params.map((p) => ({ ...p, value: part(p.value), grad: p.grad === null ? null : part(p.grad) })) : trace.start.params, state = m ? m.optimizer_state.map((row) => ({ name: row.name, state: part(row.state) })) : trace.start.optimizer_state;
  return {
    id: null,
    // no server: a summary's elements are not fetched
    params,
    optimizer_state: state,
    graph: m ? part(m.graph) : trace.start.graph,
    loss: m ? m.loss : trace.start.loss,
    iteration: m ? m.iteration : 0,
    history: history.filter((h) => h.k <= k),
    optimizer: { stateful: trace.moments.some((x) => x.writes.includes("optimizer_state")), title: "optimizer.state" },
    last: m ? { line: m.code.split(`
`)[0], reads: m.reads, writes: m.writes } : null
  };
}
function render({ model, el }) {
  let root = document.createElement("div");
  root.className = "loop-stepper", root.tabIndex = 0, root.setAttribute("aria-label", "Loop Stepper: the recorded cell"), root.innerHTML = MARKUP2, el.replaceChildren(root);
  let $ = (cls) => root.querySelector(`.${cls}`), stores = createStores($("stores")), trace = null, listings = /* @__PURE__ */ new Map(), history = [], at = 0, shown = null;
  function load() {
    trace = model.get("trace"), at = 0, shown = null, listings.clear(), $("ls-source").replaceChildren(), history = trace.moments.flatMap((m, i) => m.writes.includes("loss") && m.loss !== null ? [{ k: i + 1, n: i, iteration: m.iteration, loss: m.loss }] : []);
    let internal = trace.internal_error?.component === "doctor" ? `The doctor stopped at an internal error (${trace.internal_error.type}: ${trace.internal_error.message}); the recording went on.` : null, error = trace.error ? `Stopped by an error at line ${trace.error.line}: ${trace.error.type}: ${trace.error.message}` : null, said = [trace.stopped, error, internal].filter((s) => s);
    $("ls-ended").textContent = said.length ? said.join(" ") : `Ran to its end: ${trace.moments.length} moments, ${trace.iterations} iterations.`, $("ls-timeline").max = String(trace.moments.length), go(0);
  }
  function titleOf(file) {
    return file === null ? "the cell" : trace.titles?.[file] ?? file;
  }
  function listingOf(file) {
    if (!listings.has(file)) {
      let box = document.createElement("div");
      $("ls-source").append(box);
      let text = file === null ? trace.source ?? "" : trace.sources?.[file] ?? "", show = createSource(box, text);
      box.firstChild.setAttribute("aria-label", file === null ? "The cell's source" : `The source of ${titleOf(file)}`), listings.set(file, { box, show });
    }
    for (let [f, { box }] of listings) box.hidden = f !== file;
    return listings.get(file).show;
  }
  function go(k) {
    at = Math.max(0, Math.min(trace.moments.length, k));
    let session2 = unpack(trace, at, history);
    stores(session2, shown), shown = session2;
    let m = at === 0 ? null : trace.moments[at - 1], file = m?.file ?? null, name = titleOf(file);
    listingOf(file)(m ? m.line : null, m ? m.line + m.code.split(`
`).length - 1 : null);
    let heading = file === null ? "The cell" : `${m.function ?? "code"}() in ${name}`;
    $("ls-title").textContent = heading, $("ls-code").setAttribute("aria-label", heading);
    let of = file === null ? "" : ` of ${name}`, where = m ? `moment ${at} of ${trace.moments.length} \u2014 after line ${m.line}${of}: ${m.code.split(`
`)[0]}` : `moment 0 of ${trace.moments.length} \u2014 the start`;
    $("ls-where").textContent = where;
    let slider = $("ls-timeline");
    slider.value = String(at), slider.setAttribute("aria-valuetext", where), $("ls-back").disabled = at === 0, $("ls-next").disabled = at === trace.moments.length, $("ls-iteration").textContent = m ? `iteration ${m.iteration}` : "";
    let here = (trace.diagnoses ?? []).filter((d) => d.moment === at - 1);
    $("ls-diagnoses").replaceChildren(...here.map((d) => {
      let p = document.createElement("p");
      return p.className = "diagnosis", p.textContent = `line ${d.line}: ${d.bug} \u2014 ${d.message}`, p;
    }));
  }
  $("ls-next").addEventListener("click", () => go(at + 1)), $("ls-back").addEventListener("click", () => go(at - 1)), $("ls-timeline").addEventListener("input", (e) => go(Number(e.target.value))), root.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.target.matches?.("input[type=range]")) return;
    let step = { n: 1, ArrowRight: 1, b: -1, ArrowLeft: -1 }[e.key];
    step !== void 0 && (e.preventDefault(), e.stopPropagation(), go(at + step));
  }), model.on("change:trace", load), load();
}
var widget_default = { render };
export {
  widget_default as default
};
