// Explain a number (issue 17): click (or Enter on) any .grad number, or a heat map's cell, to
// see it as the parts that made it since .grad was last set, each backward's part split into
// its examples' contributions. A tap on a cell only shows its value (tensor.js); the Explain
// button under the map then explains the cell shown.

import { exact } from "../format.js";

const $ = (id) => document.getElementById(id);

function flatIndex(shape, at) {
  return at.reduce((flat, i, k) => flat * shape[k] + i, 0);
}

export function createExplain({ root, api, session, announce }) {
  const dialog = $("explain");
  const title = $("explain-title");
  const body = $("explain-body");
  $("explain-close").addEventListener("click", () => dialog.close());
  root.dataset.explain = "1"; // a tapped .grad cell offers its Explain button here (tensor.js)

  // every number of a small tensor is a button: reachable by Tab, opened by Enter (a heat map
  // is one stop already: its arrows pick a cell, Enter opens that one)
  new MutationObserver(() => {
    for (const v of root.querySelectorAll(".value[data-index]")) {
      if (!v.hasAttribute("tabindex")) v.setAttribute("tabindex", "0");
      v.setAttribute("role", "button");
    }
  }).observe(root, { childList: true, subtree: true });

  function target(el) {
    const tensor = el.closest(".tensor");
    const cell = el.matches(".heatmap, .explain-cell") ? tensor?.querySelector(".cell.focus")
      : el.closest(".value[data-index], .cell[data-i]");
    if (!tensor || !cell) return null;
    const param = session().params.find((p) => p.name === tensor.dataset.name);
    if (!param) return null;
    const index = cell.dataset.i !== undefined ? Number(cell.dataset.i)
      : flatIndex(param.shape, cell.dataset.index.split(",").filter((s) => s !== "").map(Number));
    return { param: param.name, index, dtype: param.dtype };
  }

  function part(p, dtype) {
    const li = document.createElement("li");
    const number = p.op === "add" ? exact(p.value, dtype) : `× ${exact(p.factor, dtype)}`;
    li.textContent = `${number} from iteration ${p.iteration}: ${p.line} (moment ${p.moment})`;
    if (p.examples.length) {
      const row = document.createElement("ol");
      row.className = "examples";
      row.start = 0;
      for (const e of p.examples) {
        const item = document.createElement("li");
        item.textContent = `example ${e.i}: ${exact(e.contribution, dtype)}`;
        row.append(item);
      }
      li.append(row);
    }
    return li;
  }

  async function open(el) {
    const at = target(el);
    if (!at) return;
    let data;
    try {
      data = await api.explain(session().id, at.param, at.index);
    } catch (error) {
      title.textContent = `${at.param}.grad`;
      body.textContent = error.message;
      dialog.showModal();
      return;
    }
    title.textContent = `${data.param}.grad element ${data.index} = ${exact(data.value, at.dtype)}`;
    const list = document.createElement("ol");
    list.className = "parts";
    list.append(...data.parts.map((p) => part(p, at.dtype)));
    body.replaceChildren(list);
    dialog.showModal();
    announce(title.textContent);
  }

  root.addEventListener("click", (e) => {
    // a finger has no hover: its tap on a cell shows the value first (tensor.js)
    if (e.pointerType === "touch" && e.target.closest(".cell")) return;
    open(e.target);
  });
  root.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && e.target.closest(".value[data-index], .heatmap")) {
      e.preventDefault();
      open(e.target);
    }
  });
}
