// Where the setup lives between visits: the URL (shareable: an instructor's link sets the
// scenario, lr and bug toggles) and sessionStorage (the student's live session survives a
// reload, but a new tab starts fresh).

const KEY = "loop-stepper.session";

/** The setup the URL asks for; only keys present in the URL are set. */
export function readUrl(search = location.search) {
  const q = new URLSearchParams(search);
  const setup = {};
  const scenario = q.get("scenario");
  if (["neuron", "moons", "parabola"].includes(scenario)) setup.scenario = scenario;
  const lr = Number(q.get("lr"));
  if (q.has("lr") && Number.isFinite(lr) && lr > 0 && lr <= 100) setup.lr = lr;
  for (const flag of ["skip_zero_grad", "step_first"]) {
    if (q.has(flag)) setup[flag] = q.get(flag) === "1" || q.get(flag) === "true";
  }
  return { setup, present: q.get("present") === "1" };
}

/** Put the session's setup in the URL without a navigation, so the link can be shared. */
export function writeUrl(session, present) {
  const q = new URLSearchParams({
    scenario: session.scenario,
    lr: String(session.lr),
    skip_zero_grad: session.toggles.skip_zero_grad ? "1" : "0",
    step_first: session.toggles.step_first ? "1" : "0",
  });
  if (present) q.set("present", "1");
  const url = `${location.pathname}?${q}`;
  if (url !== location.pathname + location.search) history.replaceState(null, "", url);
}

export const storedId = () => sessionStorage.getItem(KEY);
export const storeId = (id) => sessionStorage.setItem(KEY, id);

/**
 * The session to open: the stored one if it still exists (a 404 means it expired, so a new
 * one is made), adjusted to what the URL asks; a different scenario needs a new session.
 */
export async function openSession(api, setup) {
  const id = storedId();
  let session = null;
  if (id) {
    try {
      session = await api.get(id);
    } catch (error) {
      if (error.status !== 404) throw error;
    }
  }
  if (session && setup.scenario && setup.scenario !== session.scenario) session = null;
  if (!session) {
    session = await api.create(setup);
  } else {
    const changes = {};
    if (setup.lr !== undefined && setup.lr !== session.lr) changes.lr = setup.lr;
    for (const flag of ["skip_zero_grad", "step_first"]) {
      if (setup[flag] !== undefined && setup[flag] !== session.toggles[flag]) {
        changes[flag] = setup[flag];
      }
    }
    if (Object.keys(changes).length) session = await api.patch(session.id, changes);
  }
  storeId(session.id);
  return session;
}
