// Compare mode in lockstep: what each loop runs for one Next line or one Run, and how each
// side shows the rows lined up with the other's (align.js does the lining up). The correct
// loop is side "a" of the alignment, the loop with the bug side "b".

import { align, nextRow, position, runCounts } from "./align.js";

const NAMES = { correct: "the correct loop", bug: "the loop with the bug" };
const KEY = { correct: "a", bug: "b" };
const OTHER = { correct: "bug", bug: "correct" };

/**
 * The pair lined up: its rows, and the row both loops stand at (`at`), or null when they are
 * out of step: a line raised on one side (`apart`: that loop stopped there, as the script
 * would), a line run out of order moved one loop on, or their iterations differ.
 */
export function lineUp(sessions, apart) {
  const a = sessions.correct, b = sessions.bug;
  const rows = align(a.program, b.program);
  const lengths = { a: a.program.length, b: b.program.length };
  const cursors = { a: a.cursor, b: b.cursor };
  const at = apart || a.iteration !== b.iteration ? null : position(rows, lengths, cursors);
  return { rows, at, lengths, cursors };
}

/** What one Next line runs: "next" on a side whose line is in this row, null on a slot.
 * Out of step, each loop simply runs the line at its own cursor. */
export function planNext(pair) {
  if (pair.at === null) return { correct: "next", bug: "next" };
  const plan = nextRow(pair.rows, pair.at);
  return { correct: plan.a === "next" ? "next" : null, bug: plan.b === "next" ? "next" : null };
}

/** How many iterations each side's Run asks for (null: none, that loop already finished
 * this iteration and Run 1 only brings the other one to row 0). */
export function planRun(pair, n) {
  if (pair.at === null) return { correct: n, bug: n };
  const counts = runCounts(pair.rows, pair.lengths, pair.cursors, pair.at, n);
  return { correct: counts.a || null, bug: counts.b || null };
}

/** The entry of `side`'s line in the row the pair stands at, or null for a slot. */
export function lineAt(pair, side) {
  return pair.at === null || pair.rows[pair.at][KEY[side]] === null ? null : pair.rows[pair.at].entry;
}

/** One side's code rows (slots included), the rows to mark and its status line. */
export function view(pair, sessions, side) {
  const own = sessions[side], other = sessions[OTHER[side]];
  const k = KEY[side], o = KEY[OTHER[side]];
  const rows = pair.rows.map((r, row) => {
    if (r[k] !== null) {
      return { entry: r.entry, index: r[k], source: own.code?.[r[k]] ?? r.entry, skipped: false, row };
    }
    const source = other.code?.[r[o]] ?? r.entry;
    return {
      entry: r.entry, index: -1, source, skipped: true, row,
      description: `Skipped: nothing runs here, this loop has no ${source}; ${NAMES[OTHER[side]]} runs it in this row.`,
    };
  });
  const n = rows.length;
  const rowOf = (index) => pair.rows.findIndex((r) => r[k] === index);
  const len = own.program.length;
  if (pair.at === null) {
    return {
      rows,
      next: rowOf(own.cursor),
      ran: own.last ? rowOf((own.cursor - 1 + len) % len) : null,
      status: `iteration ${own.iteration}, next: ${own.next_line} (out of step: Reset lines the loops up again)`,
    };
  }
  const entry = lineAt(pair, side);
  return {
    rows,
    next: pair.at,
    ran: own.last || other.last ? (pair.at - 1 + n) % n : null,
    status: `iteration ${own.iteration}, row ${pair.at + 1} of ${n}, next: ` +
      (entry ?? `skipped (only ${NAMES[OTHER[side]]} has ${pair.rows[pair.at].entry})`),
  };
}
