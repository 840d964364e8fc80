// Sending the outbox and pulling the change feed (docs/API.md, "The change feed"): the edits made
// while the server could not be reached go in the order they were made — each edit with the
// version it was made from (`base_version`: the server merges it with what was saved since), each
// with the Idempotency-Key kept with it (a resend after a lost answer creates nothing twice) —
// then the notes changed elsewhere come from `GET /notes/changes?since=<the stored cursor>`.
// One tab syncs at a time (a Web Lock); the others hear of it on a BroadcastChannel.

import * as api from './api.js';
import { etagOf } from './api.js';
import { markedAsCopy, titleAndPreview } from './format.js';
import * as store from './store.js';

/** Edits the server will never take as they are (the note's text becomes a new note instead). */
const UNMERGEABLE = ['/problems/unknown-base', '/problems/merge-too-large', '/problems/note-deleted'];
/** While edits wait and the server can't be reached, how often it is tried again. */
const RETRY = 3000;

/**
 * `handlers`: `note(note, { seq, sent, merge })` for a note the server has now (an edit of ours
 * it answered: `seq`, the text `sent` and its `merge`; `{ kept: true }` for one a delete of ours
 * left, changed elsewhere; or a change pulled from the feed), `deleted(id)`, `renamed(localID,
 * note)` (a note created here got its id), `held(note)` (an edit the server refused, its text
 * kept here: `note.held` says why), `failed(message)` (in words: an edit that became a new note,
 * one the server refused, a delete it did not do), and `state({ pending, held, reachable,
 * synced })` after every change of the outbox or of reachability. What one tab sent reaches the
 * handlers of every tab.
 */
export function createSync(handlers) {
  const channel = 'BroadcastChannel' in window ? new BroadcastChannel('jotter-sync') : null;
  let reachable = true;
  let synced = false; // an edit was sent (here or in another tab) since the last was queued here
  let running = null;
  let again = false;
  let retryTimer = null;
  let pendingNow = 0; // as last counted
  let stalled = false; // the last sync failed with no answer of the server's (this device's fault)
  let notBefore = 0; // when a 429's Retry-After lets the next sync go (performance.now() ms; 0: now)

  async function report() {
    let all;
    try {
      all = await store.outbox();
    } catch (error) {
      // Not "nothing waits": the count shown stands, and the sync is tried again.
      console.error('Jotter: the edits waiting on this device could not be read; trying again.', error);
      clearTimeout(retryTimer);
      retryTimer = setTimeout(() => running || sync(), RETRY);
      return;
    }
    const held = all.filter((entry) => entry.held).length;
    const pending = all.length - held;
    pendingNow = pending;
    handlers.state({ pending, held, reachable, synced: synced && pending === 0 && held === 0 });
    clearTimeout(retryTimer);
    // (Not while a sync runs: the try under way sets the next when it ends, RETRY after it, or
    // as much later as the server asked.)
    if ((pending && !reachable) || stalled || (pending && notBefore)) {
      retryTimer = setTimeout(() => running || sync(), Math.max(RETRY, notBefore - performance.now()));
    }
  }
  channel?.addEventListener('message', ({ data }) => {
    // Another tab sent an edit (maybe one made here) or queued one: the same as if here.
    if (data?.renamed) handlers.renamed(data.renamed, data.note);
    if (data?.note) handlers.note(data.note, data.answer);
    if (data?.deleted) handlers.deleted(data.deleted);
    if (data?.held) handlers.held(data.held);
    if (data?.note || data?.deleted) synced = true;
    report();
  });
  const changed = (message = {}) => {
    channel?.postMessage(message);
    return report();
  };
  /** Edit `entry` is on the server as `note` (null: deleted): here and in every other tab. */
  async function done(entry, note, merge = null) {
    await store.complete(entry.seq, note);
    synced = true;
    // `sent`: the text as made here, which the editor has (the body sent may be it moved onto a merge).
    const message = note ? { note, answer: { seq: entry.seq, sent: entry.made ?? entry.body, merge } } : { deleted: entry.note };
    if (note && note.id !== entry.note) message.renamed = entry.note;
    if (message.renamed) handlers.renamed(message.renamed, note);
    if (note) handlers.note(note, message.answer);
    else handlers.deleted(entry.note);
    await changed(message);
  }

  /** Sends one waiting edit; false when the server can't be reached (it stays queued). */
  async function send(entry) {
    const id = entry.note;
    try {
      if (entry.kind === 'create') {
        await done(entry, await api.createNote(entry.body, { key: entry.key }));
      } else if (entry.kind === 'edit') {
        // (Always with a base: an edit the server merges, never one that writes over.)
        const answer = await api.updateNote(id, entry.body, { base: entry.base ?? 1, key: entry.key });
        await done(entry, answer.note, answer.merge ?? null);
      } else {
        // Only the version it was made from: a note changed elsewhere since is not deleted (`412`).
        const ifMatch = entry.base ? etagOf({ version: entry.base }) : null;
        const refused = await api.deleteNote(id, ifMatch, { key: entry.key }).then(() => false, (error) => {
          if (error.status === 412) return true;
          if (error.status !== 404) throw error;
          return false;
        });
        if (refused) await keep(entry);
        else await done(entry, null);
      }
      return true;
    } catch (error) {
      if (error.status === 429) {
        // Too many (a user's budget of merge work spent…): kept, and sent again when it says.
        notBefore = performance.now() + Math.max(RETRY, (error.retryAfter ?? 0) * 1000);
        return false;
      }
      if (error.status === 0 || error.status >= 500 || (error.status === 409 && !error.type)) {
        return false; // away, busy, or the same key still running: later, as it is
      }
      // The sign-in dialog is open, or (403) the session's CSRF token isn't known yet: sent after.
      if (error.status === 401 || error.status === 403) return false;
      if (entry.kind === 'edit' && (error.status === 404 || (error.status === 409 && UNMERGEABLE.includes(error.type)))) {
        // Never dropped: the text becomes a new note, in this edit's place in the order.
        const title = titleAndPreview(entry.body).title || 'Untitled note';
        const copy = { seq: entry.seq, kind: 'create', note: `local-${crypto.randomUUID()}`, key: crypto.randomUUID(),
          body: markedAsCopy(entry.body), base: null, after: null };
        await store.replace(entry.seq, copy);
        const saved = error.status === 409 && error.type !== '/problems/note-deleted' ? error.problem?.note : null;
        if (saved) {
          await store.putNotes([saved]);
          handlers.note(saved, {});
        } else {
          await store.removeNote(id);
          handlers.deleted(id);
        }
        handlers.failed(`Your edit of “${title}” could not be merged with the saved note; it is kept as a new note.`);
        return send(copy);
      }
      if (entry.kind === 'delete') {
        // Refused (not the note's owner any more…): nothing of the text is lost; said, and dropped.
        await store.complete(entry.seq, null);
        await changed();
        handlers.failed(`A note deleted offline could not be deleted: ${error.message}`);
        return true;
      }
      // Refused as it is (too large, invalid): it can never go as it is, and its text is never
      // dropped: it stays here, unsaved (held), until the user changes it; an edit made from it
      // goes instead.
      const note = await store.hold(entry.seq, error.message);
      if (note) handlers.held(note);
      await changed(note ? { held: note } : {});
      handlers.failed(`An edit made offline could not be saved: ${error.message} Its text is kept on this device: change it, and it is saved.`);
      return true;
    }
  }

  /**
   * Delete `entry` was refused: the note changed since the version it was made from. It stays,
   * as the server has it now, and the user is told, as for a delete made online.
   */
  async function keep(entry) {
    let note = null;
    try {
      note = await api.getNote(entry.note);
    } catch (error) {
      if (error.status !== 404) throw error; // away: the delete goes again later (and is refused again)
    }
    if (!note) {
      await done(entry, null); // gone meanwhile
      return;
    }
    await store.complete(entry.seq, null);
    await store.putNotes([note]);
    synced = true;
    handlers.note(note, { kept: true });
    await changed({ note, answer: { kept: true } });
    handlers.failed(`“${titleAndPreview(note.body).title || 'Untitled note'}” was changed elsewhere, so it was not deleted.`);
  }

  /** Pulls every change since the stored cursor; a full walk (`reset`) drops what it didn't name. */
  async function pull() {
    let cursor = await store.getMeta('cursor');
    const walked = new Set();
    let walking = false;
    for (;;) {
      const page = await api.changes(cursor);
      walking ||= page.reset;
      const live = page.changes.filter((change) => !change.deleted);
      for (const change of page.changes) walked.add(change.id);
      await store.putNotes(live);
      for (const change of page.changes) {
        if (change.deleted) {
          await store.removeNote(change.id);
          handlers.deleted(change.id);
        } else {
          handlers.note(change, {});
        }
      }
      cursor = page.cursor;
      if (!page.more) break;
    }
    if (walking) await store.keepOnly(walked);
    await store.setMeta('cursor', cursor);
  }

  async function run() {
    let sent = 0;
    // Another user signed in in another tab: the session is theirs now, and this page's copy is
    // not (it reloads with theirs, see account.js); nothing of it is sent as theirs.
    if (!store.isCurrent()) return;
    try {
      // The server asked to wait (a 429): the timer set then syncs, not before.
      if (performance.now() < notBefore) return;
      notBefore = 0;
      for (;;) {
        // (Not an edit the server refused: it waits for the user to change it.)
        const entry = (await store.outbox()).find((waiting) => !waiting.held);
        if (!entry) break;
        if (!(await send(entry))) {
          // (A 429 is an answer: the server is there, and said when to send it again.)
          if (!notBefore) reachable = false;
          return;
        }
        sent += 1;
      }
      await pull();
      reachable = true;
      stalled = false;
      if (sent) synced = true;
    } catch (error) {
      if (error?.status === 0) {
        reachable = false;
      } else if (!error?.status) {
        // No answer of the server's (this device's storage failed, or a bug): said in the
        // console, and tried again, as when offline; what waits stays queued.
        console.error("Jotter: couldn't sync; trying again.", error);
        stalled = true;
      } else if (error.status !== 401) {
        handlers.failed(`Couldn't sync: ${error.message}`);
      }
    } finally {
      // (Never rejects: the lock is let go, and the next sync runs.)
      await report().catch((error) => console.error('Jotter: the sync state could not be shown.', error));
    }
  }

  /**
   * Sends what waits, then pulls; one at a time across tabs; resolves when done. (Every request
   * has a timeout, api.js: a hung server or connection never holds the lock for good.)
   */
  function sync() {
    if (running) {
      again = true;
      return running;
    }
    const locked = navigator.locks ? navigator.locks.request('jotter-sync', run) : run();
    running = locked.finally(() => {
      running = null;
      if (again) {
        again = false;
        sync();
      }
    });
    return running;
  }

  return {
    sync,
    /** Queues an edit (see `store.enqueue`), says so, and tries to send it now; the note as kept here. */
    async queue(kind, options) {
      const note = await store.enqueue(kind, options);
      pendingNow += 1;
      synced = false;
      await changed();
      sync();
      return note;
    },
    /**
     * Keeps an edit the server refused as it is (`message`: too large…), sent directly, as an
     * edit refused from the outbox is kept (`held`): never sent again as it is, its text here
     * until an edit made from it takes its place. Resolves to the note as it is here now.
     */
    async hold(kind, options, message) {
      const queued = await store.enqueue(kind, options);
      const note = queued ? await store.hold(queued.pending, message) : null;
      await changed(note ? { held: note } : {});
      return note;
    },
    /** The server could not be reached (a request failed): say so until a sync gets through. */
    unreachable() {
      reachable = false;
      report();
    },
    /** Whether edits wait to be sent (a new one must go after them). */
    waiting: () => pendingNow > 0,
    report,
  };
}
