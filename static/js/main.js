// The page has two modes: the stepper, and compare mode (`/?compare=<preset>`, the lesson's
// figure F4: the correct loop beside a bug). Load only the one the URL asks for.

const mode = new URLSearchParams(location.search).has("compare") ? "compare" : "stepper";
document.body.dataset.mode = mode;
import(`./${mode}.js`);
