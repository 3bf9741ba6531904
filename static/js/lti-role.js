// An LMS's launch (issue 30): the launched user's role picks the view. GET /lti/me says whether
// they teach: an Instructor, Administrator or TeachingAssistant keeps "Start a lecture" (and
// with it the class report); a Learner's page has neither. A view, not a permission: nothing
// else of the page or the API changes. LTI off, or not launched from an LMS (404): the page
// as it is.
export async function applyLtiRole(sessionId) {
  if (document.body.dataset.ltiOn !== "1") return null; // LTI is off on this server
  let me = null;
  try {
    const answer = await fetch(`lti/me?session=${encodeURIComponent(sessionId)}`, {
      headers: { Accept: "application/json" },
    });
    if (answer.ok) me = await answer.json();
  } catch {
    return null;
  }
  if (!me) return null;
  document.body.dataset.lti = me.teaching ? "instructor" : "learner";
  const start = document.getElementById("lecture-start");
  if (start && !me.teaching) start.hidden = true;
  return me;
}
