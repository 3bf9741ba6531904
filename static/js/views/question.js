// A question's choices as buttons (a follower's or self-study), and once revealed the right
// answer with its explanation. `answer(choice)` sends one; answering again replaces it.
// Each choice is a preset: shown by its title, sent by its id.

import { presetTitle } from "../catalogue.js";

export function createQuestion(section, answer) {
  const choices = section.querySelector(".choices");
  const verdict = section.querySelector(".verdict");
  let shown = "";
  let mine = null;
  let current = null; // the newest quiz rendered (an answer may reveal it: self-study)

  function build(quiz) {
    choices.replaceChildren(...quiz.choices.map((name) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "choice";
      button.dataset.choice = name;
      button.textContent = presetTitle(name);
      button.setAttribute("aria-pressed", "false");
      button.addEventListener("click", async () => {
        try {
          mine = name;
          await answer(name);
          if (current.revealed) return;
          paint(current);
          verdict.textContent = `Your answer: ${presetTitle(name)}. You can change it until it is revealed.`;
        } catch (error) {
          mine = null;
          verdict.textContent = error.message;
        }
      });
      return button;
    }));
  }

  function paint(quiz) {
    for (const button of choices.querySelectorAll("button")) {
      const name = button.dataset.choice;
      button.setAttribute("aria-pressed", String(name === mine));
      button.disabled = quiz.revealed;
      button.classList.toggle("right", quiz.revealed && name === quiz.answer);
    }
  }

  return {
    /** `round` tells one question from the next with the same choices (self-study). */
    render(quiz, round = "") {
      section.hidden = !quiz;
      current = quiz;
      if (!quiz) return;
      const key = JSON.stringify(quiz.choices) + round;
      if (key !== shown) {
        mine = null;
        build(quiz);
        shown = key;
        verdict.textContent = "";
      }
      paint(quiz);
      if (quiz.revealed) {
        const right = quiz.answer ? presetTitle(quiz.answer) : "none of these";
        const yours = mine === null ? "" : mine === quiz.answer ? " You were right." : " Not your answer.";
        verdict.textContent = `Answer: ${right}.${yours} ${quiz.explanation ?? ""}`;
      }
    },
    /** Self-study: the answer came back with the reveal. */
    chose(name) {
      mine = name;
    },
  };
}
