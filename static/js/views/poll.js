// The class's prediction on the instructor's screen (issue 18): the question about the next
// line in large type, one bar per choice with how many chose it in this round, and once the
// instructor's next line revealed it the true choice and each round's share right. Counts
// only: who voted what never reaches this page.

const SVG = "http://www.w3.org/2000/svg";

/** "round 1: 1 of 2, round 2: 2 of 2": how many were right in each round. */
export function shares(rounds) {
  return rounds.map((r, i) => `round ${i + 1}: ${r.correct} of ${r.answers}`).join(", ");
}

function bar(n, most) {
  const span = document.createElement("span");
  span.className = "tally-bar";
  // a width attribute-free bar: an SVG rect (no inline styles under the CSP)
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 100 10");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("aria-hidden", "true");
  const rect = document.createElementNS(SVG, "rect");
  rect.setAttribute("width", String((100 * n) / most));
  rect.setAttribute("height", "10");
  svg.append(rect);
  span.append(svg);
  return span;
}

export function renderPoll(root, view) {
  root.hidden = !view;
  if (!view) return;
  const { question, rounds } = view;
  const now = rounds[rounds.length - 1];
  const answer = new Set(view.answer ?? []);
  const prompt = document.createElement("p");
  prompt.className = "poll-prompt";
  prompt.textContent = question.prompt;
  const state = document.createElement("p");
  state.className = "poll-state";
  state.textContent = view.open
    ? `Round ${view.round}: ${now.answers} of ${view.followers} answered` +
      (view.round === 1 ? "" : ` (round 1: ${rounds[0].answers})`)
    : `Answer shown. Right: ${shares(rounds)}`;
  const most = Math.max(1, ...Object.values(now.counts));
  const rows = question.choices.map((c) => {
    const row = document.createElement("div");
    row.className = "tally-row";
    row.dataset.choice = c.id;
    row.classList.toggle("right", answer.has(c.id));
    const name = document.createElement("span");
    name.className = "tally-name";
    name.textContent = c.text;
    const count = document.createElement("span");
    count.className = "tally-count";
    count.textContent = String(now.counts[c.id] ?? 0);
    row.append(name, bar(now.counts[c.id] ?? 0, most), count);
    return row;
  });
  const parts = [prompt, state, ...rows];
  if (!view.open && view.explanation) {
    const why = document.createElement("p");
    why.className = "poll-why";
    why.textContent = view.explanation;
    parts.push(why);
  }
  root.replaceChildren(...parts);
}
