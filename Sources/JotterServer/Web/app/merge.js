// Keeping the editor's text and caret in place when a save comes back merged by the server with
// changes made elsewhere (docs/API.md, "Merging an edit made from an older version").

/** The one span where `from` and `to` differ: `[start, fromEnd)` of `from` became `[start, toEnd)` of `to`. */
function changedSpan(from, to) {
  const shorter = Math.min(from.length, to.length);
  let start = 0;
  while (start < shorter && from[start] === to[start]) start += 1;
  let tail = 0;
  while (tail < shorter - start && from[from.length - 1 - tail] === to[to.length - 1 - tail]) tail += 1;
  return { start, fromEnd: from.length - tail, toEnd: to.length - tail };
}

/**
 * `now` (the text typed on while `sent` was being saved) moved onto `merged` (what the server
 * made of `sent`): what was typed meanwhile goes in where it was typed, when the merge changed
 * nothing there. `null` when both changed the same place (then `now` is saved again, merged
 * from the same base, so nothing is lost).
 */
export function rebase(sent, now, merged) {
  if (now === sent) return merged;
  const typed = changedSpan(sent, now);
  const brought = changedSpan(sent, merged);
  const insert = now.slice(typed.start, typed.toEnd);
  if (typed.fromEnd <= brought.start) {
    return merged.slice(0, typed.start) + insert + merged.slice(typed.fromEnd);
  }
  if (typed.start >= brought.fromEnd) {
    const shift = merged.length - sent.length;
    return merged.slice(0, typed.start + shift) + insert + merged.slice(typed.fromEnd + shift);
  }
  return null;
}

/**
 * Where offset `offset` of `from` is in `to`, a changed version of it: the same place when only
 * text after it changed, shifted when only text before it changed, else beside the nearest copy
 * of the text just before or just after it (or the end of the change).
 */
export function moveOffset(offset, from, to) {
  if (from === to || from.slice(0, offset) === to.slice(0, offset)) return Math.min(offset, to.length);
  const after = from.length - offset;
  if (after <= to.length && from.slice(offset) === to.slice(to.length - after)) return to.length - after;
  for (const size of [32, 16, 8, 4]) {
    const found = [];
    const before = from.slice(Math.max(0, offset - size), offset);
    for (let at = before ? to.indexOf(before) : -1; at >= 0; at = to.indexOf(before, at + 1)) found.push(at + before.length);
    const next = from.slice(offset, offset + size);
    for (let at = next ? to.indexOf(next) : -1; at >= 0; at = to.indexOf(next, at + 1)) found.push(at);
    if (found.length) return found.reduce((best, at) => (Math.abs(at - offset) < Math.abs(best - offset) ? at : best));
  }
  return Math.min(changedSpan(from, to).toEnd, to.length);
}
