// A follower's side of the class's prediction (issue 18), phone first: the question about the
// instructor's next line as large buttons (several may be true: toggle them, then send),
// "Your answer: …" once sent (answering again replaces it until the line runs), a second
// round after the class discussed, and once the line ran the truth, the class's share right
// in each round and the explanation. The Session never carries the answer before that.

import { shares } from "./poll.js";

export function createPrediction(section, send) {
  const prompt = section.querySelector(".prediction-prompt");
  const round = section.querySelector(".prediction-round");
  const choices = section.querySelector(".choices");
  const sendButton = section.querySelector(".prediction-send");
  const verdict = section.querySelector(".verdict");
  const sharesLine = section.querySelector(".prediction-shares");
  const why = section.querySelector(".prediction-why");
  let shown = ""; // the question (and round) the buttons were built for
  let picked = new Set(); // toggled, not sent yet (several-choice questions)
  let mine = null; // the ids sent in this round
  let current = null;

  const texts = (ids) => ids.map((id) => current.choices.find((c) => c.id === id)?.text ?? id);
  const said = (ids) => (ids.length ? texts(ids).join("; ") : "nothing");

  async function submit(ids) {
    try {
      await send(current.multiple ? ids : ids[0]);
      mine = ids;
      verdict.textContent = `Your answer: ${said(ids)}. You can change it until the line runs.`;
    } catch (error) {
      verdict.textContent = error.message;
    }
    paint();
  }

  function build() {
    choices.replaceChildren(...current.choices.map((c) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "choice";
      button.dataset.choice = c.id;
      button.textContent = c.text;
      button.addEventListener("click", () => {
        if (!current.open) return;
        if (!current.multiple) {
          submit([c.id]);
          return;
        }
        if (picked.has(c.id)) picked.delete(c.id);
        else picked.add(c.id);
        paint();
      });
      return button;
    }));
  }

  function paint() {
    const truth = new Set(current.open ? [] : current.answer);
    const chosen = current.multiple && current.open ? picked : new Set(mine ?? []);
    for (const button of choices.querySelectorAll("button")) {
      const id = button.dataset.choice;
      button.setAttribute("aria-pressed", String(chosen.has(id)));
      button.disabled = !current.open;
      button.classList.toggle("right", truth.has(id));
    }
    sendButton.hidden = !(current.multiple && current.open);
  }

  sendButton.addEventListener("click", () => {
    const order = current.choices.map((c) => c.id);
    submit(order.filter((id) => picked.has(id)));
  });

  return {
    render(prediction) {
      section.hidden = !prediction;
      current = prediction;
      if (!prediction) {
        shown = "";
        return;
      }
      // a new question, or its second round: the buttons start over
      const key = JSON.stringify([prediction.line, prediction.prompt, prediction.choices.map((c) => c.id)]);
      const fresh = key !== shown || (prediction.open && prediction.round !== Number(section.dataset.round));
      if (key !== shown || fresh) {
        build();
        shown = key;
        picked = new Set();
        if (fresh && prediction.open) {
          mine = null;
          verdict.textContent = "";
        }
      }
      section.dataset.round = String(prediction.round);
      section.dataset.open = String(prediction.open);
      prompt.textContent = prediction.prompt;
      round.textContent = prediction.open
        ? prediction.round === 1
          ? "Vote before the line runs."
          : "Round 2: discuss with your neighbours, then vote again."
        : "The line ran.";
      paint();
      if (prediction.open) {
        sharesLine.textContent = "";
        why.textContent = "";
        return;
      }
      const right = mine !== null && said(mine) === said(prediction.answer);
      const yours = mine === null ? "" : right ? " You were right." : ` Your answer: ${said(mine)}.`;
      verdict.textContent = `Answer: ${said(prediction.answer)}.${yours}`;
      sharesLine.textContent = `Right in the class: ${shares(prediction.rounds)}`;
      why.textContent = prediction.explanation;
    },
  };
}
