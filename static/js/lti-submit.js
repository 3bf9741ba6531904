// LTI deep linking: the signed answer goes back to the platform at once (templates/
// lti-return.html); without JavaScript its button does the same.
document.getElementById("lti-return")?.submit();
