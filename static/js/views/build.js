// "Build your own" (issue 28): a session on a model and data of one's own, described as data.
// The dataset (scikit-learn's sets with their arguments, pasted points, or an uploaded CSV),
// the layer list (layers.js), the loss and the optimizer; every edit is checked by the server
// (POST /api/models/check, debounced) and each layer shows its output shape and parameters,
// or the error the server names on it. "Create the session" opens a session on it (the
// stepper's own way to a new session); "Share this setup" gives a link that opens it again.

import { ApiError } from "../api.js";
import { catalogue } from "../catalogue.js";
import { encodeSpec } from "../state.js";
import { createLayers } from "./layers.js";
import { preview } from "./preview.js";

const $ = (id) => document.getElementById(id);
const START = [
  { type: "Linear", out_features: 16 }, { type: "ReLU" },
  { type: "Linear", out_features: 16 }, { type: "ReLU" }, { type: "Linear", out_features: 2 },
];
// the arguments a set's menu shows first (the rest of its table stays at scikit-learn's default)
const SHOWN = ["n_samples", "noise", "factor", "centers", "n_features", "n_classes", "n_class", "random_state"];

export function createBuild({ api, create }) {
  const tables = catalogue().build;
  const els = {
    panel: $("build-panel"), dataset: $("b-dataset"), args: $("b-args"), pointsBox: $("b-points-box"),
    points: $("b-points"), csvBox: $("b-csv-box"), file: $("b-file"), drop: $("b-drop"),
    target: $("b-target"), validation: $("b-validation"), batch: $("b-batch"),
    standardize: $("b-standardize"), preview: $("b-preview"), addType: $("b-add-type"),
    add: $("b-add"), summary: $("b-summary"), task: $("b-task"), loss: $("b-loss"),
    optimizer: $("b-optimizer"), lr: $("b-lr"), create: $("b-create"), share: $("b-share"),
    shareBox: $("b-share-box"), shareLink: $("b-share-link"), error: $("b-error"),
  };
  const option = (value, text) => Object.assign(document.createElement("option"), { value, textContent: text });
  els.dataset.append(
    ...Object.keys(tables.sklearn).map((name) => option(`sklearn:${name}`, name)),
    option("points", "paste points"), option("csv", "upload a CSV file"),
  );
  // the stepper's own data (the moons scenario, the lessons on it) rather than the first set by
  // name: two features, so the preview is a scatter and the starting 2-16-16-2 list fits it
  if (tables.sklearn.make_moons) els.dataset.value = "sklearn:make_moons";
  els.addType.append(...Object.keys(tables.layers).map((name) => option(name, name)));
  els.loss.append(...Object.keys(tables.losses).map((name) => option(name, name)));
  let dataset = null; // an uploaded CSV's summary
  let timer = null;
  let asked = 0; // the newest check's number: an older answer is dropped

  const layers = createLayers($("b-layers"), tables, (structural) => {
    if (structural) layers.checked([], null);
    changed();
  });
  layers.set(START);

  function drawArgs() {
    const [kind, name] = els.dataset.value.split(":");
    els.pointsBox.hidden = kind !== "points";
    els.csvBox.hidden = kind !== "csv";
    els.args.replaceChildren();
    if (kind !== "sklearn") return;
    for (const arg of SHOWN.filter((a) => a in tables.sklearn[name])) {
      const input = Object.assign(document.createElement("input"), {
        id: `b-arg-${arg}`, type: "number", step: "any", size: 6, placeholder: "default",
      });
      if (arg === "random_state") input.value = "0";
      if (arg === "n_samples") input.value = "200";
      if (arg === "noise") input.value = "0.2";
      input.dataset.arg = arg;
      const label = Object.assign(document.createElement("label"), { htmlFor: input.id, textContent: arg });
      const pair = Object.assign(document.createElement("span"), { className: "pair" });
      pair.append(label, " ", input);
      els.args.append(pair, " ");
    }
  }

  function points() {
    const rows = els.points.value.split("\n").map((l) => l.trim()).filter(Boolean)
      .map((l) => l.split(/[\s,;]+/));
    const X = rows.map((r) => r.slice(0, -1).map(Number));
    const y = rows.map((r) => (Number.isFinite(Number(r.at(-1))) ? Number(r.at(-1)) : r.at(-1)));
    return { kind: "points", X, y };
  }

  function data() {
    const [kind, name] = els.dataset.value.split(":");
    if (kind === "points") return points();
    if (kind === "csv") return dataset ? { kind: "csv", dataset: dataset.id, target: els.target.value } : null;
    const args = {};
    for (const input of els.args.querySelectorAll("input")) {
      if (input.value.trim() !== "") args[input.dataset.arg] = Number(input.value);
    }
    return { kind: "sklearn", name, args };
  }

  /** The create body the panel says, or null while it has no data yet. */
  function body() {
    const d = data();
    if (!d) return null;
    const spec = { model: layers.spec(), data: d, validation: Number(els.validation.value) };
    if (els.batch.value.trim() !== "") spec.batch_size = Number(els.batch.value);
    if (els.standardize.checked) spec.standardize = true;
    if (els.task.value) spec.task = els.task.value;
    if (els.loss.value) spec.loss = { type: els.loss.value };
    return spec;
  }

  function setup() {
    const spec = body();
    if (!spec) return null;
    const kind = els.optimizer.value;
    const optimizer = kind === "adam" ? { kind } : { kind, momentum: 0, weight_decay: 0 };
    return { ...spec, lr: Number(els.lr.value), optimizer };
  }

  function problem(text) {
    els.error.hidden = !text;
    els.error.textContent = text ?? "";
  }

  async function check() {
    const spec = body();
    if (!spec) return;
    const mine = ++asked;
    try {
      const answer = await api.check(spec);
      if (mine !== asked) return;
      layers.checked(answer.layers, null);
      preview(els.preview, answer.preview);
      const rows = answer.rows;
      els.summary.textContent = `${answer.params} parameters; input (${answer.input_shape.map((d) => d ?? "N").join(", ")}); ${answer.task}${answer.classes ? ` of ${answer.classes} classes` : ""}; ${rows.train} training rows, ${rows.validation} for validation.`;
      problem(null);
    } catch (error) {
      if (mine !== asked || !(error instanceof ApiError)) throw error;
      const d = Array.isArray(error.detail) ? error.detail[0] : null;
      const onLayer = d && d.loc?.[1] === "model" && Number.isInteger(d.loc[2]);
      layers.checked([], onLayer ? { index: d.loc[2], msg: d.msg } : null);
      els.summary.textContent = "";
      problem(onLayer ? `Layer ${d.loc[2]}: ${d.msg}` : error.message);
    }
  }

  function changed() {
    clearTimeout(timer);
    timer = setTimeout(() => check().catch(() => {}), 300);
    els.shareBox.hidden = true;
  }

  async function upload(file) {
    try {
      dataset = await api.upload(await file.arrayBuffer());
      els.target.replaceChildren(...dataset.columns.map((c) => option(c.name, `${c.name}${c.numeric ? "" : " (text)"}`)));
      els.target.value = dataset.columns.at(-1).name; // the last column, as a spreadsheet often has it
      problem(null);
      changed();
    } catch (error) {
      dataset = null;
      problem(error.message);
    }
  }

  els.dataset.addEventListener("change", () => {
    drawArgs();
    changed();
  });
  els.panel.addEventListener("change", (event) => {
    if (event.target !== els.file && event.target !== els.dataset) changed();
  });
  els.points.addEventListener("input", changed);
  els.file.addEventListener("change", () => els.file.files[0] && upload(els.file.files[0]));
  for (const kind of ["dragover", "drop"]) {
    els.drop.addEventListener(kind, (event) => {
      event.preventDefault();
      if (kind === "drop" && event.dataTransfer.files[0]) upload(event.dataTransfer.files[0]);
    });
  }
  els.add.addEventListener("click", () => layers.add(els.addType.value));
  els.create.addEventListener("click", () => {
    const s = setup();
    if (s) create(s);
  });
  els.share.addEventListener("click", () => {
    const s = setup();
    if (!s) return;
    const { lr, optimizer, ...spec } = s;
    const q = new URLSearchParams({ spec: encodeSpec(spec), lr: String(lr) });
    if (optimizer.kind === "adam") q.set("optimizer", "adam");
    els.shareLink.value = new URL(`${location.pathname}?${q}`, location.href).href;
    els.shareBox.hidden = false;
    els.shareLink.select();
  });
  els.panel.addEventListener("toggle", () => {
    if (els.panel.open) changed();
  });
  drawArgs();

  return {
    /** Mirror a custom session's spec into the panel (after a reload or a shared link). */
    show(session) {
      if (session.scenario !== "custom" || els.panel.dataset.shown === session.id) return;
      els.panel.dataset.shown = session.id;
      layers.set(session.spec.model);
    },
  };
}
