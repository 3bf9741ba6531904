// The read/written marks: after a line, each store's section says whether that line read it,
// wrote it, or both (the lesson's F2 table), in words beside its heading and as data-io for
// its colour. The page and the notebook's widget mark their stores with this one function.

const IO_WORDS = { read: "read", write: "written", "read write": "read + written" };

/** Mark the `[data-store]` sections under `root` with `last` ({line, reads, writes} or null). */
export function markStores(root, last) {
  const reads = new Set(last?.reads ?? []);
  const writes = new Set(last?.writes ?? []);
  for (const section of root.querySelectorAll("[data-store]")) {
    const store = section.dataset.store;
    const io = [reads.has(store) ? "read" : "", writes.has(store) ? "write" : ""]
      .filter(Boolean).join(" ");
    section.dataset.io = io;
    const badge = section.querySelector(".io");
    const what = store === "data" ? "the batch " : "";
    if (badge) badge.textContent = io ? `${what}${IO_WORDS[io]} by ${last.line}` : "";
  }
}
