// The program editor and the presets menu. "Edit the loop" gives every line of the code panel
// four named buttons (move up, move down, duplicate, remove) and shows an "Add line" row; each
// edit sends the whole new program and the server answers with the Session (a 422 is shown
// in its words). After an edit the list is rebuilt, so focus goes back to the same tool on the
// line's new position: a keyboard user can press "Move up" three times in a row.
// `change(rewrite)` queues a PATCH of `rewrite(copy of the program)`, resolving to true if
// it was accepted.

import { defaultProgram, entries } from "../catalogue.js";
import { presetProgram, sameList, scaled } from "../state.js";

const TOOLS = [
  ["up", "↑", "Move", "up"],
  ["down", "↓", "Move", "down"],
  ["duplicate", "⊕", "Duplicate", ""],
  ["remove", "✕", "Remove", ""],
];
const $ = (id) => document.getElementById(id);

function option(value, text) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text;
  return o;
}

export function createEditor(change) {
  const els = {
    panel: $("code-panel"), toggle: $("edit"), addRow: $("add-row"), entry: $("add-entry"),
    where: $("add-where"), add: $("add-line"), preset: $("preset"), note: $("preset-note"),
  };
  let session = null;
  let presets = [];
  // every entry of the server's table, labelled with its Python (the plain style's line)
  els.entry.replaceChildren(...entries().map((e) => option(e.name, e.python)));

  function setEditing(on) {
    els.toggle.setAttribute("aria-pressed", String(on));
    els.panel.classList.toggle("editing", on);
    els.addRow.hidden = !on;
  }
  els.toggle.addEventListener("click", () =>
    setEditing(els.toggle.getAttribute("aria-pressed") !== "true"));

  /** Send the edited program; then put focus on `tool` of line `index` (or nearby). */
  async function edit(rewrite, index, tool) {
    const ok = await change(rewrite);
    if (!ok || index === undefined) return;
    const tools = [...els.panel.querySelectorAll(`.tools[data-index="${index}"] button`)];
    const target = tools.find((b) => b.dataset.tool === tool && !b.disabled) ??
      tools.find((b) => !b.disabled) ?? els.toggle;
    target.focus();
  }

  function decorate(item, row) {
    if (row.skipped || !session) return;
    const i = row.index, n = session.program.length;
    const tools = document.createElement("span");
    tools.className = "tools";
    tools.dataset.index = String(i);
    tools.setAttribute("role", "group");
    tools.setAttribute("aria-label", `Edit line ${i + 1}`);
    for (const [tool, symbol, verb, dir] of TOOLS) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.tool = tool;
      b.textContent = symbol;
      b.setAttribute("aria-label", `${verb} line ${i + 1}${dir ? ` ${dir}` : ""} (${row.source})`);
      b.title = `${verb}${dir ? ` ${dir}` : ""}`;
      b.disabled = (tool === "up" && i === 0) || (tool === "down" && i === n - 1);
      b.addEventListener("click", () => {
        // the edit applies to the program as it is when its turn in the queue comes
        if (tool === "up" || tool === "down") {
          const j = tool === "up" ? i - 1 : i + 1;
          edit((p) => ([p[i], p[j]] = [p[j], p[i]], p), j, tool);
        } else if (tool === "duplicate") {
          edit((p) => (p.splice(i + 1, 0, p[i]), p), i + 1, tool);
        } else {
          edit((p) => (p.splice(i, 1), p), Math.max(0, Math.min(i, n - 2)), tool);
        }
      });
      tools.append(b);
    }
    item.append(tools);
  }

  els.add.addEventListener("click", () => {
    const at = Number(els.where.value), entry = els.entry.value;
    edit((p) => (p.splice(at, 0, entry), p)).then(() => els.add.focus());
  });
  els.preset.addEventListener("change", () => {
    const chosen = presets.find((p) => p.name === els.preset.value);
    if (chosen) change(() => presetProgram(chosen, scaled(session)));
  });

  let whereKey = "";
  return {
    decorate,
    setPresets(list) {
      presets = list;
      els.preset.replaceChildren(
        option("", "your own loop"),
        ...list.map((p) => option(p.name, p.title)),
      );
      els.preset.options[0].disabled = true;
      if (session) this.render(session);
    },
    /** Call before the code view repaints: `decorate` reads the new program. */
    render(next) {
      session = next;
      els.preset.value = session.preset ?? "";
      const chosen = presets.find((p) => p.name === session.preset);
      const k = session.accumulate;
      const words = chosen
        ? [chosen.title, chosen.explanation]
        : k > 1 && sameList(session.program, defaultProgram({}, k, scaled(session)) ?? [])
          ? ["Gradient accumulation", `zero_grad once, then forward, the loss divided by ${k} and backward ${k} times, then one step: backward adds, so .grad ends as the full batch's gradient.`]
          : ["Your own loop", "No preset matches it. Run it and read the numbers."];
      const key = words.join("|");
      if (els.note.dataset.key !== key) {
        els.note.dataset.key = key;
        els.note.replaceChildren();
        const b = document.createElement("strong");
        b.textContent = `${words[0]}. `;
        els.note.append(b, words[1]);
      }
      const wk = JSON.stringify(session.code);
      if (wk !== whereKey) {
        whereKey = wk;
        const atEnd = els.where.value === "" || els.where.value === String(els.where.options.length - 1);
        const keep = atEnd ? "" : els.where.value;
        els.where.replaceChildren(
          option("0", "the start"),
          ...session.code.map((c, i) => option(String(i + 1), i + 1 === session.code.length ? `the end (after ${c})` : `after line ${i + 1}: ${c}`)),
        );
        els.where.value = keep !== "" && Number(keep) <= session.code.length ? keep : String(session.code.length);
      }
    },
  };
}
