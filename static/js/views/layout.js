// A layered layout for the autograd graph, small enough to read and test: the graphs here
// are trees of at most ~20 nodes, so a full graph-drawing library would be mostly unused.
// Layer = longest path from a root (the loss), order within a layer = the mean position of
// the parents (one barycentre sweep), which keeps the edges from crossing on these trees.

export function layers(nodes, edges) {
  const parents = new Map(nodes.map((n) => [n.id, []]));
  for (const e of edges) parents.get(e.target)?.push(e.source);
  const depth = new Map();
  const visit = (id, seen = new Set()) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0; // a cycle cannot happen in autograd; do not hang if it did
    seen.add(id);
    const ps = parents.get(id) ?? [];
    const d = ps.length ? 1 + Math.max(...ps.map((p) => visit(p, seen))) : 0;
    depth.set(id, d);
    return d;
  };
  nodes.forEach((n) => visit(n.id));
  const rows = [];
  nodes.forEach((n) => (rows[depth.get(n.id)] ??= []).push(n.id));
  const position = new Map();
  rows.forEach((row, r) => {
    if (r > 0) {
      const key = (id) => {
        const ps = parents.get(id).map((p) => position.get(p)).filter((x) => x !== undefined);
        return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : 0;
      };
      // stable sort: ties keep PyTorch's next_functions order
      row.sort((a, b) => key(a) - key(b));
    }
    row.forEach((id, i) => position.set(id, i - (row.length - 1) / 2));
  });
  return { rows, position, depth };
}

/** Pixel boxes: one row per layer, nodes centred around the parents' mean position. */
export function place(nodes, edges, { charWidth = 7, height = 26, gapX = 14, gapY = 22 } = {}) {
  const { rows } = layers(nodes, edges);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const width = (id) => byId.get(id).label.length * charWidth + 16;
  const boxes = new Map();
  let maxWidth = 0;
  rows.forEach((row) => {
    const total = row.reduce((s, id) => s + width(id), 0) + gapX * (row.length - 1);
    maxWidth = Math.max(maxWidth, total);
  });
  rows.forEach((row, r) => {
    const total = row.reduce((s, id) => s + width(id), 0) + gapX * (row.length - 1);
    let x = (maxWidth - total) / 2;
    for (const id of row) {
      boxes.set(id, { x, y: r * (height + gapY), w: width(id), h: height });
      x += width(id) + gapX;
    }
  });
  return { boxes, width: maxWidth, height: rows.length * (height + gapY) - gapY };
}
