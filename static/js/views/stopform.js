// One stop of a lesson being made (issue 29, "Make a lesson"): its title, its note with a
// Markdown preview, its question (none, "auto" or custom with choices and feedback), vote,
// and its claims (`expect`, as JSON: "Expect the current values" fills them from the live
// stores). Typing writes into the stop object itself, so the list is redrawn only when its
// shape changes (a stop or a choice added, moved or deleted), never under the caret.

import { markdown } from "./markdown.js";

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

/** A labelled field: `<span class="pair"><label>…</label> <input></span>`. */
function field(id, words, control) {
  control.id = id;
  return el("span", { className: "pair" }, el("label", { htmlFor: id, textContent: words }), " ", control);
}

/** The next free choice id: a, b, c, … */
function freeId(choices) {
  const used = new Set(choices.map((c) => c.id));
  for (let i = 0; ; i += 1) {
    const id = i < 26 ? String.fromCharCode(97 + i) : `c${i}`;
    if (!used.has(id)) return id;
  }
}

function questionEditor(stop, id, redraw) {
  const q = stop.question;
  const box = el("div", { className: "author-question" });
  if (!q || typeof q !== "object") return box;
  const prompt = el("input", { type: "text", value: q.prompt ?? "", size: 40, maxLength: 2000 });
  prompt.addEventListener("input", () => { q.prompt = prompt.value; });
  const multiple = el("input", { type: "checkbox", checked: Boolean(q.multiple), id: `${id}-multiple` });
  multiple.addEventListener("change", () => { q.multiple = multiple.checked; });
  box.append(
    field(`${id}-prompt`, "Prompt", prompt),
    el("label", { className: "check" }, multiple, " more than one right choice"),
  );
  const list = el("ol", { className: "author-choices" });
  q.choices.forEach((choice, i) => {
    const cid = `${id}-choice-${i}`;
    const text = el("input", { type: "text", value: choice.text ?? "", size: 24 });
    text.addEventListener("input", () => { choice.text = text.value; });
    const right = el("input", { type: "checkbox", checked: Boolean(choice.correct), id: `${cid}-correct` });
    right.setAttribute("aria-label", `Choice ${choice.id} is right`);
    right.addEventListener("change", () => { choice.correct = right.checked; });
    const feedback = el("input", { type: "text", value: choice.feedback ?? "", size: 24 });
    feedback.addEventListener("input", () => { choice.feedback = feedback.value; });
    const drop = el("button", { type: "button", className: "small", textContent: `Delete choice ${choice.id}` });
    drop.addEventListener("click", () => { q.choices.splice(i, 1); redraw(); });
    list.append(el("li", {},
      field(`${cid}-text`, `Choice ${choice.id}`, text), " ",
      el("label", { className: "check" }, right, " right"), " ",
      field(`${cid}-feedback`, `Feedback on ${choice.id}`, feedback), " ", drop));
  });
  const add = el("button", { type: "button", className: "small", textContent: "Add a choice" });
  add.addEventListener("click", () => {
    q.choices.push({ id: freeId(q.choices), text: "", correct: false, feedback: "" });
    redraw(`${id}-choice-${q.choices.length - 1}-text`);
  });
  box.append(list, add);
  return box;
}

/** "Expect the current values" is for the stop the session stands at. */
export function follow(fill, here) {
  const away = here !== Number(fill.dataset.at);
  fill.disabled = away;
  fill.title = away ? `The session is at moment ${here}: go to moment ${fill.dataset.at} first` : "";
}

/**
 * The editor of `stop`, the `index`-th of `count`. `hooks`: redraw(focusId?) after a change of
 * shape, move(index, by), remove(index), expect(index) (fills the claims), here() -> the
 * session's moment; `checked`: this stop's last check ({holds, failures}) or undefined.
 */
export function stopForm(stop, index, count, hooks, checked) {
  const id = `a-stop-${index}`;
  const li = el("li", { className: "author-stop" });
  li.dataset.at = String(stop.at);
  const heading = el("h3", { id: `${id}-heading`, textContent: `Stop ${index + 1}, at moment ${stop.at}` });
  li.setAttribute("aria-labelledby", heading.id);

  const title = el("input", { type: "text", value: stop.title, size: 30, maxLength: 200 });
  title.addEventListener("input", () => { stop.title = title.value; });
  const note = el("textarea", { rows: 3, cols: 40, value: stop.note ?? "", spellcheck: true });
  const preview = el("div", { className: "lesson-note preview", ariaLabel: "Preview of the note" });
  preview.setAttribute("role", "region");
  const show = () => preview.replaceChildren(...markdown(stop.note ?? ""));
  note.addEventListener("input", () => { stop.note = note.value; show(); });
  show();

  const kind = el("select");
  for (const [value, words] of [["none", "none"], ["auto", "auto: predict the next line"], ["custom", "custom, with choices"]]) {
    kind.append(el("option", { value, textContent: words }));
  }
  kind.value = stop.question === "auto" ? "auto" : stop.question ? "custom" : "none";
  kind.addEventListener("change", () => {
    stop.question = kind.value === "none" ? null : kind.value === "auto" ? "auto" : {
      prompt: "", multiple: false,
      choices: [
        { id: "a", text: "", correct: true, feedback: "" },
        { id: "b", text: "", correct: false, feedback: "" },
      ],
    };
    hooks.redraw(`${id}-question`);
  });
  const vote = el("input", { type: "checkbox", checked: Boolean(stop.vote), id: `${id}-vote` });
  vote.addEventListener("change", () => { stop.vote = vote.checked; });

  const expect = el("textarea", { rows: 3, cols: 40, spellcheck: false });
  expect.value = stop.expectText ?? (stop.expect ? JSON.stringify(stop.expect) : "");
  expect.placeholder = `{"loss": 18.5}`;
  expect.addEventListener("input", () => { stop.expectText = expect.value; });
  const fill = el("button", { type: "button", className: "a-fill", textContent: "Expect the current values" });
  fill.dataset.at = String(stop.at);
  follow(fill, hooks.here());
  fill.addEventListener("click", () => hooks.expect(index));

  const up = el("button", { type: "button", className: "small", textContent: "Up", disabled: index === 0 });
  const down = el("button", { type: "button", className: "small", textContent: "Down", disabled: index === count - 1 });
  const remove = el("button", { type: "button", className: "small", textContent: "Delete stop" });
  up.setAttribute("aria-label", `Move stop ${index + 1} up`);
  down.setAttribute("aria-label", `Move stop ${index + 1} down`);
  remove.setAttribute("aria-label", `Delete stop ${index + 1}`);
  up.addEventListener("click", () => hooks.move(index, -1));
  down.addEventListener("click", () => hooks.move(index, 1));
  remove.addEventListener("click", () => hooks.remove(index));

  const verdict = el("div", { className: "author-verdict" });
  if (checked) {
    verdict.append(el("p", { textContent: checked.holds ? "Its claims hold." : "Its claims do not hold:" }));
    if (checked.failures.length) {
      verdict.append(el("ul", {}, ...checked.failures.map((f) => el("li", {
        textContent: `${f.claim}: the lesson says ${JSON.stringify(f.expected)}, PyTorch has ${JSON.stringify(f.actual)}`,
      }))));
    }
    li.classList.toggle("fails", !checked.holds);
  }

  li.append(
    heading,
    field(`${id}-title`, "Title", title),
    field(`${id}-note`, "Note (Markdown)", note), preview,
    field(`${id}-question`, "Question", kind),
    questionEditor(stop, id, hooks.redraw),
    el("label", { className: "check" }, vote, " the class votes (in a lecture)"),
    field(`${id}-expect`, "Expect (JSON: params, grad, loss, raises, tolerance)", expect), fill,
    el("div", { className: "author-moves" }, up, down, remove),
    verdict,
  );
  return li;
}

/** The stop as the document says it: the keys it was given (a file's stop comes back as it
 * was), its claims parsed from their text if typed (a SyntaxError names the stop). */
export function stopOf(stop, index) {
  const { expectText, ...out } = stop;
  if (expectText !== undefined && !expectText.trim()) delete out.expect;
  else if (expectText !== undefined) {
    try {
      out.expect = JSON.parse(expectText);
    } catch {
      throw new SyntaxError(`stop ${index + 1}: its expect is not JSON`);
    }
  }
  return out;
}
