// Sharing and downloading the session (issue 9): "Share this moment" freezes the session as
// it stands into a link anyone can open (their own copy, with its past, so Back works there
// too); the two downloads are the loop as a standalone script and as a notebook.

const $ = (id) => document.getElementById(id);

/** The page's own address with ?snapshot=token: wherever the page was served from. */
export function shareLink(token) {
  return `${location.origin}${location.pathname}?snapshot=${encodeURIComponent(token)}`;
}

/** Resolves true if the text reached the clipboard; never rejects, never waits long. */
async function copy(text) {
  if (!navigator.clipboard?.writeText) return false;
  const timeout = new Promise((resolve) => setTimeout(() => resolve(false), 1500));
  const written = navigator.clipboard.writeText(text).then(() => true, () => false);
  return Promise.race([written, timeout]);
}

/**
 * `handlers.snapshot()` -> Promise of {snapshot, moment, at: "id@moment"} (null if it failed:
 * the page shows why);
 * `handlers.announce(text)`; `scriptUrl(id, format)` for the download links.
 */
export function createShare(handlers, scriptUrl) {
  const els = {
    share: $("share"), box: $("share-box"), link: $("share-link"),
    py: $("download-py"), ipynb: $("download-ipynb"),
  };
  let busy = false;

  els.share.addEventListener("click", async () => {
    if (busy) return;
    busy = true;
    els.share.setAttribute("aria-busy", "true");
    try {
      const taken = await handlers.snapshot();
      if (!taken) return;
      const link = shareLink(taken.snapshot);
      // shown in a field as well, so it can be copied by hand without clipboard permission
      els.link.value = link;
      els.box.dataset.at = taken.at;
      els.box.hidden = false;
      delete els.box.dataset.copied;
      const copied = await copy(link);
      els.box.dataset.copied = String(copied);
      handlers.announce(copied
        ? `Link to moment ${taken.moment} copied to the clipboard.`
        : `Link to moment ${taken.moment} is in the field "Link to this moment": copy it from there.`);
    } finally {
      busy = false;
      els.share.removeAttribute("aria-busy");
    }
  });
  // a click in the field selects the whole link, ready to copy
  els.link.addEventListener("focus", () => els.link.select());

  return {
    els,
    render(session) {
      els.share.disabled = false;
      els.py.setAttribute("href", scriptUrl(session.id));
      els.ipynb.setAttribute("href", scriptUrl(session.id, "ipynb"));
      // the link is to the moment it was made at: once the page moves on, it no longer is
      const here = `${session.id}@${session.moment}`;
      if (els.box.dataset.at !== here) els.box.hidden = true;
    },
  };
}
