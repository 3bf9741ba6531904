// The phone's folds (issue 31): below 700px wide the setup and the share menu fold away behind
// a disclosure button each ("Setup", "Share"), closed until tapped, so the loop and the stores
// come first. Wider, page.css hides the buttons and always shows what they fold: a desktop
// shows every control as before. The state is the button's aria-expanded, which the CSS reads.

export function installFolds(root = document) {
  for (const toggle of root.querySelectorAll(".fold-toggle")) {
    toggle.addEventListener("click", () => {
      const open = toggle.getAttribute("aria-expanded") === "true";
      toggle.setAttribute("aria-expanded", String(!open));
    });
  }
}
