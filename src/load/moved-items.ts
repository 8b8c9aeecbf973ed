/**
 * Moved items: the version the API serves now wins.
 *
 * The spec lets a key repeat on other days, so a key coming back on another day may be a second
 * live item (a collision: the later dt keeps the key, src/load/upsert.ts) or the same item whose
 * date the service corrected (a move). Only the day the stored version is on can tell them apart:
 * a whole read of that day (not truncated, every item valid, not empty) that lacks the key is
 * evidence its version is no longer served there. Such a row gets absent_since, and from then on
 * the version another day serves takes its key, whether that day is earlier or later:
 *  - if the other day's window loads after the absence was recorded, its upsert replaces the row
 *    (the ON CONFLICT rule lets a version of any day replace an absent one);
 *  - if it loaded before (same run or earlier), its version was set aside as a collision, and the
 *    whole read of the old day promotes it from key_collisions here.
 * Either way the version left behind is kept in key_collisions with reason 'moved' (the trigger of
 * migration 0026) and counted as a move, not a collision.
 *
 * "Read most recently" thus means: by evidence of each day's own latest whole read, not by which
 * window happened to commit last. Two windows of one run may load concurrently: the old day's
 * absence mark and the new day's upsert both lock the one stored row, so one commits first and
 * the other sees its result; in both orders the served version ends up holding the key. A version
 * left behind by a move is never promoted back: if the item moves back, its day serves it again.
 * An empty answer is no evidence (it may be a transient `200 []`), nor is a truncated or partly
 * invalid one (the missing key may be among the items cut off or unreadable).
 *
 * Deletes on evidence: a row absent from its day's whole read in two runs in a row, whose key no
 * other day serves (it would have taken the row over), is marked missing_upstream_since. It is
 * never deleted, and a read of its day that holds it again clears both marks. That read need not
 * be whole: serving an item proves it exists, only proving it gone needs every item.
 *
 * The window's merge does all of this on the server, in the owner's function store_window()
 * (migration 0041: merge_window_<table>).
 */
/** Whether a day's answer can prove an item is not on that day. */
export function isWholeDayEvidence(read: { truncated: boolean; rejected: number; valid: number }): boolean {
  return !read.truncated && read.rejected === 0 && read.valid > 0;
}
