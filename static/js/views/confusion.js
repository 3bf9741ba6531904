// A spec's classification on its validation split (issue 28): the confusion matrix as a
// table (rows the true class, columns the predicted; a cell's shade its share of its row),
// with the split named in its caption, the accuracy and the loss.

import { display } from "../format.js";

export function confusion(out, table) {
  const classes = out.classes;
  const head = document.createElement("tr");
  head.append(cell("th", "true \\ predicted"));
  for (const name of classes) head.append(cell("th", name, "col"));
  const body = out.matrix.map((row, r) => {
    const tr = document.createElement("tr");
    tr.append(cell("th", classes[r], "row"));
    const total = row.reduce((a, b) => a + b, 0) || 1;
    row.forEach((n, c) => {
      const td = cell("td", String(n));
      const share = n / total;
      // the diagonal (right) in orange, the rest (wrong) in blue; stronger as it holds more
      td.style.background = r === c ? `hsl(28 90% ${97 - 50 * share}%)` : `hsl(212 70% ${97 - 50 * share}%)`;
      tr.append(td);
    });
    return tr;
  });
  const caption = document.createElement("caption");
  const words = `Confusion matrix on the ${out.split} split (rows: the true class, columns: the predicted): accuracy ${(100 * out.accuracy).toFixed(1)}%, loss ${display(out.loss, "float64")}.`;
  caption.textContent = words;
  table.replaceChildren(caption, head, ...body);
  return words;
}

function cell(tag, text, scope) {
  const e = document.createElement(tag);
  e.textContent = text;
  if (scope) e.setAttribute("scope", scope);
  return e;
}
