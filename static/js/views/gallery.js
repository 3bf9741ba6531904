// The gallery of built-in lessons (issue 29): a list of links (`?lesson=id`), each with its
// summary and number of stops; fetched once, when its fold is first opened.

import { markdown } from "./markdown.js";

export function createGallery({ api, root, list }) {
  let asked = false;
  root.addEventListener("toggle", async () => {
    if (!root.open || asked) return;
    asked = true;
    try {
      const lessons = await api.lessons();
      list.replaceChildren(...lessons.map((lesson) => {
        const link = Object.assign(document.createElement("a"), {
          href: `./?lesson=${encodeURIComponent(lesson.id)}`, textContent: lesson.title,
        });
        const about = document.createElement("div");
        about.className = "lesson-summary";
        about.append(...markdown(lesson.summary ?? ""));
        const li = document.createElement("li");
        li.append(link, ` (${lesson.stops} stops)`, about);
        return li;
      }));
    } catch (error) {
      asked = false; // the next opening asks again
      list.replaceChildren(Object.assign(document.createElement("li"), { textContent: error.message }));
    }
  });
}
