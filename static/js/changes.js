// An answer carries only the stores a line changed (issue 38). A request says what the page
// holds (?held=: an answer's `version`, "start" for its creation's answer, or "none"); the
// answer leaves out each store equal to the held one's and names it in `unchanged`. `restore`
// puts them back, so every view still reads a whole Session. A lecture's followers get the
// same shape, each event against the one before it (app/engine/changes.py is the server's half).

/** `answer` made whole from `held`, the Session it was compared with: each store named in its
 * `unchanged` taken from `held`, and each field an entry of its params left out (an unchanged
 * summary) taken from that entry there. An answer without `unchanged` is whole already.
 * Nothing that did not change is copied: the whole shares it with `held` (views only read). */
export function restore(answer, held) {
  if (!answer || !Array.isArray(answer.unchanged)) return answer;
  if (!held) throw new Error("an answer left out stores this page does not hold");
  const whole = { ...answer };
  delete whole.unchanged;
  whole.params = answer.params
    ? answer.params.map((entry, i) => ({ ...held.params[i], ...entry }))
    : held.params;
  for (const store of answer.unchanged) {
    if (store !== "params" && store !== "grad" && store in held) whole[store] = held[store];
  }
  return whole;
}

/** What one page holds of its sessions: each one's newest answers by version (a few: two
 * requests may be under way at once, each answered against the version it sent). */
export class Held {
  constructor(kept = 4) {
    this.kept = kept;
    this.sessions = new Map(); // id -> Map(version -> whole Session), oldest first
  }

  /** What a request on session `id` says it holds: the newest version, else "none". */
  held(id) {
    const answers = this.sessions.get(id);
    return answers?.size ? [...answers.keys()].at(-1) : "none";
  }

  /** `answer` (to a request that sent `sent`) made whole, and kept under its version. */
  take(id, answer, sent) {
    const whole = restore(answer, this.sessions.get(id)?.get(sent));
    if (whole?.version) this.keep(id, whole.version, whole);
    return whole;
  }

  /** Keep `session` as what `version` names for session `id` ("start": its creation's answer). */
  keep(id, version, session) {
    const answers = this.sessions.get(id) ?? new Map();
    answers.delete(version);
    answers.set(version, session);
    while (answers.size > this.kept) answers.delete(answers.keys().next().value);
    this.sessions.set(id, answers);
  }

  forget(id) {
    this.sessions.delete(id);
  }
}
