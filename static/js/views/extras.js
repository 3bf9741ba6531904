// The rest of the real loop's stores, compact: the lr (a scheduler writes it, step reads it),
// the mode (train/eval: dropout and BatchNorm read it), BatchNorm's buffers, running_loss
// (and, when it is a tensor, the graphs it keeps alive), the checkpoint, and what the line
// just run returned or warned. Each shows only when the session can touch it.

import { touches } from "../catalogue.js";
import { display } from "../format.js";

function row(store, title) {
  const el = document.createElement("div");
  el.className = "store mini";
  el.dataset.store = store;
  const head = document.createElement("h3");
  head.textContent = title;
  const io = document.createElement("span");
  io.className = "io";
  head.append(" ", io);
  const body = document.createElement("p");
  body.className = "value";
  el.append(head, body);
  return { el, body };
}

function describeScheduler(s) {
  const k = s.scheduler;
  if (!k) return "no scheduler";
  return k.kind === "step"
    ? `StepLR(step_size=${k.step_size}, gamma=${k.gamma})`
    : `CosineAnnealingLR(T_max=${k.T_max})`;
}

export function createExtras(section, body) {
  const rows = {
    lr: row("lr", "Learning rate"),
    mode: row("mode", "Mode"),
    buffers: row("buffers", "Buffers"),
    running_loss: row("running_loss", "running_loss"),
    ckpt: row("ckpt", "Checkpoint ckpt"),
  };
  const said = document.createElement("p");
  said.className = "line-said";
  said.setAttribute("role", "status");
  body.replaceChildren(...Object.values(rows).map((r) => r.el), said);

  return function render(s) {
    const dtype = s.params[0]?.dtype ?? "float64";
    const fmt = (v) => display(v, dtype);
    // a store shows when the session has it, or a line of its program reads or writes it
    // (the server's table says which); buffers only when the model has some to show
    const uses = (store) => touches(s.program, store);
    const show = {
      lr: Boolean(s.scheduler) || uses("lr"),
      mode: s.model_options.dropout > 0 || s.model_options.batchnorm || s.mode === "eval" ||
        uses("mode"),
      buffers: s.buffers.length > 0,
      running_loss: uses("running_loss") || s.running_loss.value !== 0,
      ckpt: Boolean(s.ckpt) || uses("ckpt"),
    };
    rows.lr.body.textContent = `optimizer.param_groups[0]["lr"] = ${fmt(s.lr)} (${describeScheduler(s)})`;
    rows.mode.body.textContent = `model.training = ${s.mode === "train" ? "True" : "False"}` +
      (s.mode === "train" ? " (train: dropout draws masks, BatchNorm updates its statistics)"
        : " (eval: no dropout, BatchNorm uses its running statistics, which stay put)");
    rows.buffers.body.replaceChildren(...s.buffers.map((b) => {
      const line = document.createElement("span");
      line.className = "buffer";
      const values = Array.isArray(b.value) ? b.value : [b.value];
      const shown = values.slice(0, 4).map(fmt).join(", ") + (values.length > 4 ? ", …" : "");
      line.textContent = `${b.name}: ${Array.isArray(b.value) ? `[${shown}]` : shown}`;
      return line;
    }));
    const r = s.running_loss;
    rows.running_loss.body.textContent = r.tensor
      ? `tensor(${fmt(r.value)}): keeps ${r.graphs} loss graph${r.graphs === 1 ? "" : "s"} alive ` +
        `(${r.nodes} autograd nodes, ${r.saved_bytes} bytes of saved tensors)`
      : `${fmt(r.value)} (a Python float: no graph kept)`;
    rows.ckpt.body.textContent = s.ckpt
      ? `holds ${s.ckpt.keys.map((k) => `"${k}"`).join(" and ")}, taken at iteration ` +
        `${s.ckpt.iteration} after ${s.ckpt.steps} step${s.ckpt.steps === 1 ? "" : "s"}`
      : "None: no checkpoint taken yet";
    for (const [name, r2] of Object.entries(rows)) r2.el.hidden = !show[name];
    const last = s.last;
    const parts = [];
    if (last?.result !== null && last?.result !== undefined) {
      parts.push(`${last.line} returned ${fmt(last.result)}` +
        (last.scaled ? `: above max_norm ${s.max_norm}, every .grad scaled down`
          : last.scaled === false ? ": nothing scaled" : ""));
    }
    for (const w of last?.warnings ?? []) parts.push(`PyTorch warned: ${w}`);
    said.textContent = parts.join(" ");
    said.hidden = !parts.length;
    section.hidden = !Object.values(show).some(Boolean) && !parts.length;
  };
}
