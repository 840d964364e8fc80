// This browser's copy of the notes, in IndexedDB: every note the app has seen (so the list and
// the notes open with no network), the outbox of edits not yet on the server (created, edited,
// deleted: each with the version it was made from and an Idempotency-Key, kept until the server
// has answered it) and the change feed's cursor. Shared by every tab of the app. Each user has a
// copy of their own (`jotter:<name>`; `jotter` with nobody signed in): the one of the user this
// browser last signed in as (`USER` in localStorage), so that another user signing in here never
// sees, nor sends as theirs, what the first one left waiting. The copy records the account's id
// (`claim`): a new account given a removed one's name does not see the first one's notes.

import { rebase } from './merge.js';

const VERSION = 1;
/** localStorage: the name of the user whose copy this page uses. */
export const USER = 'jotter-user';

let opening = null;
let openedAs = null;

/** The database of `user` (a name, or null for nobody). */
const nameFor = (user) => (user ? `jotter:${user}` : 'jotter');

function currentUser() {
  try {
    return localStorage.getItem(USER);
  } catch {
    return null;
  }
}

/** Whether this page's copy is `user`'s, or none is open yet (then it will be). */
export const isFor = (user) => openedAs === null || openedAs === nameFor(user);

/** Whether this page's copy is still that of the user last signed in here (not if another tab
 * has signed in as someone else since: this page must then send nothing). */
export const isCurrent = () => isFor(currentUser());

function promised(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** The database, opened once (and created on the first visit). */
function database() {
  opening ??= new Promise((resolve, reject) => {
    openedAs = nameFor(currentUser());
    const request = indexedDB.open(openedAs, VERSION);
    request.onupgradeneeded = () => {
      const db = request.result;
      db.createObjectStore('notes', { keyPath: 'id' });
      const outbox = db.createObjectStore('outbox', { keyPath: 'seq', autoIncrement: true });
      outbox.createIndex('note', 'note');
      db.createObjectStore('meta');
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
    request.onblocked = () => reject(new Error('IndexedDB is held by an older version of the app in another tab'));
  });
  return opening;
}

/**
 * Runs `work(stores)` in one transaction over `names`; resolves to what `work` returned once the
 * transaction has committed (so a resolved write is on disk), rejects if it aborted.
 */
async function transaction(names, mode, work) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(names, mode, { durability: 'strict' });
    const stores = Object.fromEntries(names.map((name) => [name, tx.objectStore(name)]));
    let result;
    Promise.resolve(work(stores)).then((value) => { result = value; }, (error) => { tx.abort(); reject(error); });
    tx.oncomplete = () => resolve(result);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

/** A local id for a note created here, until the server gives it its own. */
export const isLocalID = (id) => String(id).startsWith('local-');
const newKey = () => crypto.randomUUID();

/** Every note kept here, the last changed first. */
export function allNotes() {
  return transaction(['notes'], 'readonly', async ({ notes }) => {
    const all = await promised(notes.getAll());
    return all.sort((a, b) => (b.changed ?? 0) - (a.changed ?? 0) || String(b.updated_at).localeCompare(String(a.updated_at)));
  });
}

export const getNote = (id) => transaction(['notes'], 'readonly', ({ notes }) => promised(notes.get(String(id))));

/**
 * Keeps `list` (notes as the server has them) — except notes with edits still in the outbox,
 * whose text here is newer. `changed` orders them (the last changed first).
 */
export function putNotes(list) {
  if (!list.length) return Promise.resolve();
  return transaction(['notes', 'outbox'], 'readwrite', async ({ notes, outbox }) => {
    for (const note of list) {
      if (await promised(outbox.index('note').count(note.id))) continue;
      const known = await promised(notes.get(note.id));
      if (known && known.version > note.version) continue;
      notes.put({ ...note, changed: known && known.version === note.version ? known.changed : Date.now() });
    }
  });
}

/** Forgets note `id` (deleted on the server), unless edits of it are still waiting. */
export function removeNote(id) {
  return transaction(['notes', 'outbox'], 'readwrite', async ({ notes, outbox }) => {
    if (!(await promised(outbox.index('note').count(String(id))))) notes.delete(String(id));
  });
}

/** Drops the notes not in `ids` and without waiting edits (after the change feed's full walk). */
export function keepOnly(ids) {
  return transaction(['notes', 'outbox'], 'readwrite', async ({ notes, outbox }) => {
    for (const id of await promised(notes.getAllKeys())) {
      if (!ids.has(id) && !(await promised(outbox.index('note').count(id)))) notes.delete(id);
    }
  });
}

/**
 * Queues an edit and changes the note here in the same transaction: `create` (`body`),
 * `edit` (`note`: the note as the text was based on it, `body`) or `delete` (`note`). An edit
 * made from text that is itself still waiting (`note.pending`) is based on that edit: its base
 * version is the one the server gives that edit. `key` is the Idempotency-Key (a new one unless
 * given: a write already tried with a key keeps it). An edit of text the server refused (`held`)
 * takes that edit's place: its text now is this one. Resolves to the note as it is here now.
 */
export function enqueue(kind, { note = null, body = '', key = newKey() }) {
  return transaction(['notes', 'outbox', 'meta'], 'readwrite', async ({ notes, outbox, meta }) => {
    const now = new Date().toISOString().replace('T', ' ').slice(0, 19);
    const id = note?.id ?? `local-${newKey()}`;
    const known = (await promised(notes.get(id))) ?? note;
    let entry = { kind, note: id, key, body, base: null, after: null };
    if (kind !== 'create') {
      // Based on a waiting edit when the text came from it, else on a version the server gave.
      // (One another tab has sent meanwhile left the version its text is based on.)
      const waiting = note.pending ? await promised(outbox.get(note.pending)) : null;
      if (waiting?.held) {
        outbox.delete(waiting.seq);
        entry = folded(waiting, entry);
        if (!entry) {
          notes.delete(id); // a note created here, refused, then deleted: it never was
          return null;
        }
      } else if (waiting) entry.after = note.pending;
      else entry.base = note.pending ? (await promised(meta.get(`made-${note.pending}`))) ?? note.version : note.version;
    }
    const seq = await promised(outbox.add(entry));
    if (kind === 'delete') {
      notes.delete(id);
      return null;
    }
    const { held, ...rest } = known ?? {};
    const local = { ...rest, id, body, version: known?.version ?? 0, created_at: known?.created_at ?? now,
      updated_at: now, attachments: known?.attachments ?? [], pending: seq, changed: Date.now() };
    notes.put(local);
    return local;
  });
}

/** The text the edits after `entry` were made from: its own, before it was moved onto a merge. */
const madeFrom = (entry) => entry.made ?? entry.body;
/** The version of the server's that `madeFrom(entry)` descends from. */
const ancestor = (entry) => entry.from ?? entry.base;

/**
 * `later`, made from the text of `entry` (the server refused it, so it goes no more), in its
 * stead: the same base, and a create when `entry` created the note (nothing when `later`
 * deletes what was never created).
 */
function folded(entry, later) {
  const { made, from, held, ...rest } = later;
  if (entry.kind === 'create') return later.kind === 'delete' ? null : { ...rest, kind: 'create', base: null, after: null };
  return { ...rest, base: ancestor(entry), after: null };
}

/** The waiting edits, oldest first. */
export const outbox = () => transaction(['outbox'], 'readonly', ({ outbox: store }) => promised(store.getAll()));
export const pendingCount = () => transaction(['outbox'], 'readonly', ({ outbox: store }) => promised(store.count()));

/**
 * The server answered edit `seq` with `note` (null: nothing to keep, as for a delete): the edit
 * leaves the outbox, later edits of a note created here take its id, and edits based on this one
 * take the version it made. The note here becomes the server's, unless more edits of it wait.
 *
 * When the answer's text is not the text the later edits were made from (the server merged it
 * with changes made elsewhere), a later edit is moved onto the merged text (`rebase`) and goes
 * from the answer's version; where it can't be (both changed the same place) it goes from the
 * version its text descends from, and the server merges it: the change made elsewhere is never
 * written over. A delete made after it names that older version, so it is refused (`412`): the
 * user never saw the change made elsewhere.
 */
export function complete(seq, note) {
  return transaction(['notes', 'outbox', 'meta'], 'readwrite', async ({ notes, outbox: store, meta }) => {
    const entry = await promised(store.get(seq));
    if (!entry) return;
    store.delete(seq);
    const made = madeFrom(entry);
    const same = !note || entry.kind === 'create' || note.body === made;
    // The version an edit made from this one's text goes from (another tab's, see `enqueue`).
    if (note) meta.put(same ? note.version : ancestor(entry) ?? note.version, `made-${seq}`);
    const rest = await promised(store.getAll());
    for (const later of rest) {
      let changed = false;
      if (note && later.note === entry.note && entry.note !== note.id) { later.note = note.id; changed = true; }
      if (later.after === seq) {
        later.after = null;
        const moved = same || later.kind !== 'edit' ? null : rebase(made, later.body, note.body);
        if (same) {
          later.base = note?.version ?? null;
        } else if (moved !== null) {
          later.made = later.body;
          later.from = ancestor(entry);
          later.body = moved;
          later.base = note.version;
        } else {
          later.base = ancestor(entry);
        }
        changed = true;
      }
      if (changed) store.put(later);
    }
    const waiting = note ? rest.some((later) => later.note === entry.note || later.note === note.id) : false;
    const kept = await promised(notes.get(entry.note));
    if (note && entry.note !== note.id) notes.delete(entry.note);
    if (!note) return;
    if (waiting && kept) {
      // Its text here is a later edit's: keep it, under the server's id.
      notes.put({ ...kept, id: note.id, version: note.version, created_at: note.created_at });
    } else if (!waiting) {
      notes.put({ ...note, changed: kept?.changed ?? Date.now() });
    }
  });
}

/**
 * The server refused edit `seq` as it is (too large, invalid: `message`), and would refuse it
 * again: its text stays here, never dropped. An edit made from it goes in its stead (its text
 * is the newer); else it stays in the outbox, `held` (not sent), and the note here keeps its text,
 * marked `held`, until an edit of it (`enqueue`) takes its place. Resolves to the note when held.
 */
export function hold(seq, message) {
  return transaction(['notes', 'outbox'], 'readwrite', async ({ notes, outbox: store }) => {
    const entry = await promised(store.get(seq));
    if (!entry) return null;
    const later = (await promised(store.getAll())).find((other) => other.after === seq);
    if (later) {
      store.delete(seq);
      const next = folded(entry, later);
      if (next) store.put(next);
      else store.delete(later.seq);
      return null;
    }
    store.put({ ...entry, held: message });
    const now = new Date().toISOString().replace('T', ' ').slice(0, 19);
    // (A copy of an edit that could not be merged has no note here yet: it gets one, to be seen.)
    const kept = (await promised(notes.get(entry.note)))
      ?? { id: entry.note, body: madeFrom(entry), version: 0, created_at: now, updated_at: now, attachments: [] };
    const note = { ...kept, held: message, pending: seq, changed: kept.changed ?? Date.now() };
    notes.put(note);
    return note;
  });
}

/** Replaces waiting edit `seq` (an edit the server could not take) by `entry`, in its place. */
export function replace(seq, entry) {
  return transaction(['outbox'], 'readwrite', ({ outbox: store }) => { store.put({ ...entry, seq }); });
}

export const getMeta = (key) => transaction(['meta'], 'readonly', ({ meta }) => promised(meta.get(key)));
export const setMeta = (key, value) => transaction(['meta'], 'readwrite', ({ meta }) => { meta.put(value, key); });

/**
 * localStorage: text a page kept as it was hidden or went (`jotter-draft:<key>`: `{ key, note,
 * body, at, user }`, see the editor's `flush`). IndexedDB writes are asynchronous, and a page
 * that is closing may be gone before one is done; localStorage is written at once.
 */
const DRAFT = 'jotter-draft:';

/** Keeps `draft` at once, as the user's this page's copy is of. */
export function keepDraft(draft) {
  try {
    localStorage.setItem(DRAFT + draft.key, JSON.stringify({ ...draft, user: currentUser() }));
  } catch {
    // Storage refused (full, a private window): the save that follows is all there is.
  }
}

export function dropDraft(key) {
  try {
    localStorage.removeItem(DRAFT + key);
  } catch {
    // Nothing was kept.
  }
}

/** The drafts of the user this page's copy is of, the oldest first. */
export function drafts() {
  const user = currentUser();
  const found = [];
  try {
    for (let index = 0; index < localStorage.length; index += 1) {
      const name = localStorage.key(index);
      if (!name?.startsWith(DRAFT)) continue;
      try {
        const draft = JSON.parse(localStorage.getItem(name));
        if (draft?.key && typeof draft.body === 'string' && (draft.user ?? null) === user) found.push(draft);
      } catch {
        localStorage.removeItem(name); // not one of ours
      }
    }
  } catch {
    return [];
  }
  return found.sort((a, b) => a.at - b.at);
}

/** Forgets everything kept here (signing out). */
export function clear() {
  for (const draft of drafts()) dropDraft(draft.key);
  return transaction(['notes', 'outbox', 'meta'], 'readwrite', (stores) => {
    for (const store of Object.values(stores)) store.clear();
  });
}

/**
 * Makes this copy that of the account `userId` (signed in under its name). A copy kept for
 * another account of that name — removed since, the name given to someone else — is emptied
 * when nothing in it waits to be sent: its notes were that account's, no one else's to see.
 * One with waiting edits or drafts is kept, and they are sent as this account's: the browser
 * can't tell a new person from the same one whose account was made again (after a restore of
 * an older backup), and no edit is ever dropped. A copy from before the account was recorded is
 * taken as this one's. Resolves to whether it was emptied.
 */
export function claim(userId) {
  const drafted = drafts().length > 0;
  return transaction(['notes', 'outbox', 'meta'], 'readwrite', async (stores) => {
    const owner = await promised(stores.meta.get('user-id'));
    if (owner === userId) return false;
    const empty = owner !== undefined && !drafted && (await promised(stores.outbox.count())) === 0;
    if (empty) for (const store of Object.values(stores)) store.clear();
    stores.meta.put(userId, 'user-id');
    return empty;
  });
}
