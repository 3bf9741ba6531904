// A notebook cell's source, as the recorded trace ran it: numbered lines, the statement just
// run marked (its lines, aria-current) and named in words, the way the page's code view marks
// the line at the cursor. Read-only: the trace already ran.

/** Fill `root` with `source`'s lines; returns show(first, last) marking lines first..last. */
export function createSource(root, source) {
  const list = document.createElement("ol");
  list.className = "source";
  list.setAttribute("aria-label", "The cell's source");
  list.tabIndex = 0; // it scrolls past 32 rem: the keyboard scrolls it too
  const items = source.replace(/\n$/, "").split("\n").map((text, i) => {
    const item = document.createElement("li");
    item.dataset.line = String(i + 1);
    const code = document.createElement("code");
    code.textContent = text || " ";
    item.append(code);
    list.append(item);
    return item;
  });
  root.replaceChildren(list);
  return function show(first, last) {
    items.forEach((item, i) => {
      const on = first !== null && i + 1 >= first && i + 1 <= last;
      item.classList.toggle("ran", on);
      if (on && i + 1 === first) item.setAttribute("aria-current", "step");
      else item.removeAttribute("aria-current");
    });
    const at = first === null ? null : items[first - 1];
    // keep the statement in view inside the listing's own box, never scrolling the notebook
    if (at && (at.offsetTop < list.scrollTop || at.offsetTop > list.scrollTop + list.clientHeight - 20)) {
      list.scrollTop = Math.max(0, at.offsetTop - list.clientHeight / 3);
    }
  };
}
