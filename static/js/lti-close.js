// LTI dynamic registration is done: the platform's dialog (the parent window, or the opener
// of a new tab) closes on this message (1EdTech Dynamic Registration, section 3.6).
const to = window.opener ?? (window.parent !== window ? window.parent : null);
to?.postMessage({ subject: "org.imsglobal.lti.close" }, "*");
