// LTI client-side postMessage storage (1EdTech, "lti.put_data" / "lti.get_data"): inside an
// LMS's iframe, where third-party cookies are blocked, the login's state is kept in the
// platform's own storage and read back at the launch. The server says what to do in
// #lti-storage's data attributes (templates/lti.html); no data of the page is code.
const box = document.getElementById("lti-storage");
const { action, target, origin, state, nonce, next } = box.dataset;
const WAIT_MS = 2000; // a platform that does not answer: go on without its storage

function frame() {
  try {
    return target === "_parent" ? window.parent : window.parent.frames[target] ?? null;
  } catch {
    return null;
  }
}

/** One message to the platform's storage frame; its answer, or null on no answer. */
function ask(subject, fields) {
  return new Promise((resolve) => {
    const id = `${subject}-${Math.random().toString(36).slice(2)}`;
    const to = frame();
    let timer = 0;
    const done = (value) => {
      window.removeEventListener("message", heard);
      clearTimeout(timer);
      resolve(value);
    };
    function heard(event) {
      if (event.origin !== origin || !event.data || event.data.message_id !== id) return;
      done(event.data.error ? null : event.data);
    }
    if (!to || to === window) return done(null);
    window.addEventListener("message", heard);
    timer = setTimeout(() => done(null), WAIT_MS);
    to.postMessage({ subject, message_id: id, ...fields }, origin);
  });
}

async function put() {
  await ask("lti.put_data", { key: `state_${state}`, value: state });
  await ask("lti.put_data", { key: `nonce_${nonce}`, value: nonce });
  location.replace(next);
}

async function get() {
  const form = document.getElementById("lti-repost");
  const answer = await ask("lti.get_data", { key: `state_${state}` });
  if (answer && typeof answer.value === "string") form.elements.lti_storage_state.value = answer.value;
  form.submit();
}

if (action === "put") put();
else if (action === "get") get();
