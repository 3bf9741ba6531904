// The page has three modes: the stepper; compare mode (`/?compare=<preset>`, the lesson's
// figure F4: the correct loop beside a bug); the self-study question (`/?quiz=1`: which bug
// is this loop running?). Load only the one the URL asks for.

const q = new URLSearchParams(location.search);
const mode = q.has("compare") ? "compare" : q.get("quiz") === "1" ? "selfstudy" : "stepper";
document.body.dataset.mode = mode;
import(`./${mode}.js`);
