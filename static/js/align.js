// Compare mode's lockstep (the lesson's F4, "wrong beside right"): the two loops' programs
// lined up like a diff, so one Next line runs one row of both. A line that only one loop has
// is a skipped slot on the other side. Pure functions of the programs and the two sessions'
// cursors (no page, no server), so a reload, an expired pair or a Run lands on the same rows.

/**
 * The rows of programs `a` and `b` lined up: a longest common subsequence over entry names
 * (exact entries: `zero_grad(set_to_none=False)` is another line than `zero_grad`). Each row is
 * `{entry, a, b}` with the index of that line in each program, or null where that program has
 * no such line (a skipped slot). Every `forward` is matched before anything else (it weighs
 * more than all other lines together): a Session's iteration counts forward calls, so matched
 * forwards are what keeps both loops on the same iteration at every row. Where two alignments
 * are equally long, b's own line comes first: with `step_first` the bug's early step sits in a
 * row of its own above the shared backward, and the correct loop's step comes two rows later.
 */
export function align(a, b) {
  const heavy = a.length + b.length + 1;
  const weight = (entry) => (entry === "forward" ? heavy : 1);
  // best[i][j]: the weight of the heaviest common subsequence of a[i:] and b[j:]
  const best = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      best[i][j] = a[i] === b[j]
        ? weight(a[i]) + best[i + 1][j + 1]
        : Math.max(best[i + 1][j], best[i][j + 1]);
    }
  }
  const rows = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      rows.push({ entry: a[i], a: i++, b: j++ }); // equal heads: matching them is optimal
    } else if (j < b.length && (i === a.length || best[i][j + 1] >= best[i + 1][j])) {
      rows.push({ entry: b[j], a: null, b: j++ });
    } else {
      rows.push({ entry: a[i], a: i++, b: null });
    }
  }
  return rows;
}

/** The row that holds `side`'s line `index`. */
const rowOf = (rows, side, index) => rows.findIndex((r) => r[side] === index);

/**
 * The rows where one loop may stand with its cursor at `cursor`: after the row of the line it
 * ran last, up to the row of the line it runs next. At cursor 0 it may also have finished the
 * iteration already, its last line behind it while the other loop still has rows to run.
 */
function places(rows, side, cursor, length) {
  const ok = new Array(rows.length).fill(false);
  const after = cursor === 0 ? -1 : rowOf(rows, side, cursor - 1);
  const upTo = rowOf(rows, side, cursor);
  for (let r = after + 1; r <= upTo; r++) ok[r] = true;
  if (cursor === 0) for (let r = rowOf(rows, side, length - 1) + 1; r < rows.length; r++) ok[r] = true;
  return ok;
}

/**
 * Which row both loops stand at, read off their cursors (`cursors = {a, b}`), or null when
 * they are out of step (no row fits both). The rows one cursor allows are b-only rows and the
 * row of its own next line; the other's are a-only rows and its own next line's row; so at most
 * one row fits both, and the pair's place needs no memory of its own.
 */
export function position(rows, lengths, cursors) {
  const a = places(rows, "a", cursors.a, lengths.a);
  const b = places(rows, "b", cursors.b, lengths.b);
  const at = rows.findIndex((_, r) => a[r] && b[r]);
  return at === -1 ? null : at;
}

/** Whether `side` has run every line of this iteration while the pair stands at row `at`. */
export function finished(rows, side, cursor, length, at) {
  return cursor === 0 && at > rowOf(rows, side, length - 1);
}

/**
 * What each loop runs for one Next line at row `at`: "next" (its line in that row, which is
 * the line at its cursor) or "skip" (a slot: nothing runs on that side).
 */
export function nextRow(rows, at) {
  const row = rows[at];
  return { a: row.a === null ? "skip" : "next", b: row.b === null ? "skip" : "next" };
}

/**
 * How many iterations each loop runs for Run `n` at row `at`: a loop's run goes on until its
 * cursor wrapped `n` times, so one that already finished this iteration (it stands at cursor
 * 0 while the other still has rows) runs one fewer; both then stop at row 0 together.
 */
export function runCounts(rows, lengths, cursors, at, n) {
  const count = (side) => (finished(rows, side, cursors[side], lengths[side], at) ? n - 1 : n);
  return { a: count("a"), b: count("b") };
}
