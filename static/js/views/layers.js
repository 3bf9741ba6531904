// The "Build your own" panel's layer list (issue 28): add, remove and reorder layers, each
// with its arguments (PyTorch's own names, from the server's table in the catalogue: the page
// holds no list of its own) and, after the server's check, its output shape and parameter
// count; an error the server names on a layer shows on that layer (aria-invalid, and its
// words linked by aria-describedby).

const el = (tag, attrs = {}, text) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
};

/** A size argument as typed ("3" or "1, 8, 8") as the spec wants it: an int or a list. */
function sizeOf(text) {
  const parts = text.split(/[\s,×x]+/).filter(Boolean).map(Number);
  return parts.length === 1 ? parts[0] : parts;
}

export function createLayers(list, tables, onChange) {
  let layers = []; // [{type, args: {name: text}}]
  let shown = []; // the check's rows, by index
  let error = null; // {index, msg}

  function argument(i, name, kind, value, inferred) {
    const id = `b-l${i}-${name}`;
    const label = el("label", { for: id }, name);
    let input;
    if (kind.kind === "bool" || kind.kind === "choice") {
      input = el("select", { id });
      const choices = kind.kind === "bool" ? ["true", "false"] : kind.choices;
      input.append(el("option", { value: "" }, "default"), ...choices.map((c) => el("option", { value: c }, c)));
      input.value = value ?? "";
    } else {
      input = el("input", {
        id, type: "text", size: kind.kind === "size" ? 6 : 5, inputmode: "decimal",
        placeholder: inferred ? "inferred" : "default",
      });
      input.value = value ?? "";
    }
    input.dataset.arg = name;
    input.addEventListener("change", () => {
      layers[i].args[name] = input.value;
      onChange();
    });
    const pair = el("span", { class: "pair" });
    pair.append(label, " ", input);
    return pair;
  }

  function row(layer, i) {
    const table = tables.layers[layer.type];
    const li = el("li", { class: "layer" });
    const title = el("strong", { id: `b-l${i}-title` }, layer.type);
    li.append(title);
    for (const [name, kind] of Object.entries(table.args)) {
      // the input's size is inferred from what flows in: left empty, it says so
      li.append(" ", argument(i, name, kind, layer.args[name], name === table.inferred));
    }
    const out = shown[i];
    const info = el("span", { class: "shape", id: `b-l${i}-shape` },
      out ? `→ (${out.output_shape.map((d) => d ?? "N").join(", ")}) · ${out.params} parameters` : "");
    li.append(" ", info);
    const buttons = [["↑", `Move layer ${i} up`, -1], ["↓", `Move layer ${i} down`, 1]];
    for (const [text, label, by] of buttons) {
      const b = el("button", { type: "button", class: "small", "aria-label": label }, text);
      b.disabled = i + by < 0 || i + by >= layers.length;
      b.addEventListener("click", () => {
        [layers[i], layers[i + by]] = [layers[i + by], layers[i]];
        onChange(true);
      });
      li.append(" ", b);
    }
    const remove = el("button", { type: "button", class: "small", "aria-label": `Remove layer ${i}` }, "✕");
    remove.addEventListener("click", () => {
      layers.splice(i, 1);
      onChange(true);
    });
    li.append(" ", remove);
    if (error && error.index === i) {
      const words = el("span", { class: "layer-error", id: `b-l${i}-error` }, error.msg);
      li.classList.add("invalid");
      li.append(" ", words);
      for (const input of li.querySelectorAll("input, select")) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", words.id);
      }
    }
    li.setAttribute("aria-labelledby", title.id);
    return li;
  }

  function draw() {
    list.replaceChildren(...layers.map(row));
  }

  return {
    set(spec) {
      layers = spec.map(({ type, init, ...args }) => ({
        type, args: Object.fromEntries(Object.entries(args).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v)])),
      }));
      shown = [];
      error = null;
      draw();
    },
    add(type) {
      layers.push({ type, args: {} });
      onChange(true);
    },
    /** The layers as the spec sends them; a number typed wrong is sent as typed (the server
     * names it on its layer). */
    spec() {
      return layers.map(({ type, args }) => {
        const out = { type };
        for (const [name, text] of Object.entries(args)) {
          if (text === "") continue;
          const kind = tables.layers[type].args[name]?.kind;
          out[name] = kind === "bool" ? text === "true" : kind === "choice" ? text
            : kind === "size" ? sizeOf(text) : Number.isFinite(Number(text)) ? Number(text) : text;
        }
        return out;
      });
    },
    /** The check's answer (its rows), or the error it named on a layer. */
    checked(rows, failure) {
      shown = rows ?? [];
      error = failure;
      draw();
    },
    redraw: draw,
  };
}
