// Jotter's web app: the list of notes (search, paging, live updates) and the routes
// `#/` (the list), `#/new` and `#/notes/{id}` (the editor), `#/files` (files in no note) and
// `#/trash` (Recently Deleted).

import * as api from './api.js';
import { announce, byId, el } from './dom.js';
import { confirmChoice, dialogOpen } from './dialogs.js';
import { createEditor } from './editor.js';
import { createFiles } from './files.js';
import { formatDateTime, formatDay, formatTime, isoTimestamp, parseTimestamp, titleAndPreview } from './format.js';
import { connectLive } from './live.js';
import { createTrash } from './trash.js';
import { setupAccount } from './account.js';
import * as store from './store.js';
import { createSync } from './sync.js';

const PAGE_SIZE = 50;

const state = {
  notes: [], // loaded notes, the last changed first (`order=updated`)
  next: null, // the URL of the next page, or null
  query: '',
  loading: false,
  loadingMore: false,
  error: null,
  request: 0, // the current list request, so late answers to older ones are dropped
  fresh: new Set(), // ids that just arrived live (highlighted once)
  offline: false, // the list is this browser's copy: the server could not be reached
};

const listElement = byId('notes');
const search = byId('search');

// MARK: - The list

/** The list as the editor sees it. */
const notes = {
  find: (id) => state.notes.find((note) => note.id === id),
  /** The loaded notes, the last changed first. */
  all: () => state.notes,
  /**
   * Adds or replaces `note` (an older version never replaces a newer one). The list is in the
   * order of each note's last change, so a note that changed since it was listed (a newer
   * version) moves to the top, and so does one that is not listed: it was just created,
   * restored or changed, and the pages still to load no longer hold it (their cursor is a point
   * in the change order, before its change).
   */
  upsert(note, { fresh = false } = {}) {
    if (note.version && !note.pending) store.putNotes([note]).catch(() => {});
    const index = state.notes.findIndex((known) => known.id === note.id);
    if (index >= 0) {
      const known = state.notes[index];
      if (known.version > note.version) return;
      if (known.version === note.version) {
        state.notes[index] = note; // the same version: it stays where it is
      } else {
        state.notes.splice(index, 1);
        state.notes.unshift(note);
      }
    } else {
      if (state.query) return; // can't tell whether it matches the search
      state.notes.unshift(note);
      if (fresh) state.fresh.add(note.id);
    }
    renderList();
  },
  /**
   * Where the keyboard goes on from once note `id` is gone: a function giving the link of the
   * note listed after it (before it, when it is the last), else the list.
   */
  neighbour(id) {
    const index = state.notes.findIndex((note) => note.id === id);
    const other = index < 0 ? null : state.notes[index + 1] ?? state.notes[index - 1];
    return () => (other && listElement.querySelector(`.note-link[data-id="${CSS.escape(other.id)}"]`)) || listElement;
  },
  remove(id) {
    const count = state.notes.length;
    state.notes = state.notes.filter((note) => note.id !== id);
    if (state.notes.length !== count) renderList();
  },
};

function listURL() {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE), order: 'updated' });
  if (state.query) query.set('q', state.query);
  return `/notes?${query}`;
}

/** How long the first page may take before the notes this browser keeps are shown meanwhile. */
const KEPT_NOTES_AFTER_MS = 2500;

async function loadFirstPage() {
  const request = ++state.request;
  state.loading = true;
  state.error = null;
  renderList();
  // A server that does not answer (a hung server or link) is only given up on after the request
  // timeout: until then, the notes as this browser has them, still marked as loading.
  const meanwhile = state.query ? null : setTimeout(async () => {
    const kept = await store.allNotes().catch(() => null);
    if (kept?.length && request === state.request && state.loading && !state.notes.length) {
      state.notes = kept;
      renderList();
    }
  }, KEPT_NOTES_AFTER_MS);
  try {
    const page = await api.listNotes(listURL());
    clearTimeout(meanwhile);
    if (request !== state.request) return;
    state.notes = page.notes;
    state.next = page.next;
    state.offline = false;
    clearError();
    store.putNotes(page.notes).catch(() => {});
    // Edits still waiting to be sent show as they are here.
    if (!state.query) {
      for (const kept of (await store.allNotes().catch(() => [])).filter((note) => note.pending).reverse()) {
        state.notes = [kept, ...state.notes.filter((note) => note.id !== kept.id)];
      }
    }
  } catch (error) {
    clearTimeout(meanwhile);
    if (request !== state.request) return;
    const kept = error.status === 0 && !state.query ? await store.allNotes().catch(() => null) : null;
    if (kept) {
      // The server can't be reached: the notes as this browser has them.
      state.notes = kept;
      state.next = null;
      state.offline = true;
      sync.unreachable();
    } else {
      state.error = error.message;
      if (state.query) {
        // The notes listed are not its matches: none is shown rather than every note.
        state.notes = [];
        state.next = null;
      }
    }
  }
  state.loading = false;
  renderList();
}

async function loadMore() {
  if (!state.next || state.loadingMore) return;
  const request = state.request;
  state.loadingMore = true;
  renderList();
  try {
    const page = await api.listNotes(state.next);
    if (request !== state.request) return;
    const known = new Set(state.notes.map((note) => note.id));
    state.notes.push(...page.notes.filter((note) => !known.has(note.id)));
    state.next = page.next;
    announce(`${page.notes.length} more ${page.notes.length === 1 ? 'note' : 'notes'} loaded`);
  } catch (error) {
    toast(`Couldn't load more notes: ${error.message}`);
  } finally {
    state.loadingMore = false;
    renderList();
  }
}

/**
 * The id of the note the address names (`#/notes/4`), else of the one the editor has open: the
 * list marks it from the first render, before the note itself has been read.
 */
function openNoteID() {
  return NOTE_ROUTE.exec(location.hash)?.[1] ?? editor.id;
}

/** `#/notes/{id}`: a server's id, or a note created here not yet sent (`local-…`). */
const NOTE_ROUTE = /^#\/notes\/(\d+|local-[0-9a-f-]+)$/;

function noteItem(note) {
  const { title, preview } = titleAndPreview(note.body);
  const edited = parseTimestamp(note.updated_at);
  const files = note.attachments?.length ?? 0;
  const fresh = state.fresh.delete(note.id);
  const open = openNoteID();
  return el('li', { class: fresh ? 'fresh' : null },
    el('a', { href: `#/notes/${note.id}`, class: 'note-link', 'data-id': note.id,
      'aria-current': note.id === open ? 'page' : null },
    el('span', { class: title ? 'note-title' : 'note-title untitled' }, title || 'Empty note'),
    el('span', { class: 'note-preview' }, preview || (title ? 'No additional text' : '')),
    el('span', { class: 'note-when' },
      edited ? el('time', { datetime: isoTimestamp(note.updated_at), title: `Last edited ${formatDateTime(note.updated_at)}` },
        el('span', { class: 'note-day' }, formatDay(edited)), ' ',
        el('span', { class: 'note-time' }, formatTime(edited))) : null,
      files ? el('span', { class: 'note-files' }, `${files} ${files === 1 ? 'file' : 'files'}`) : null)));
}

function renderList() {
  // Rebuilding the list must not take the keyboard focus away from the note it was on.
  const focused = document.activeElement?.closest?.('.note-link')?.dataset.id;
  const shown = notes.all();
  listElement.replaceChildren(...shown.map(noteItem));
  if (focused) listElement.querySelector(`.note-link[data-id="${CSS.escape(focused)}"]`)?.focus();
  listElement.setAttribute('aria-busy', String(state.loading));

  const message = byId('list-message');
  const empty = shown.length === 0;
  message.hidden = !(state.error || empty);
  message.dataset.kind = state.error ? 'error' : state.loading ? 'loading' : 'empty';
  if (state.error) {
    message.replaceChildren(el('p', {}, `Couldn't load notes: ${state.error}`),
      el('button', { type: 'button', class: 'button subtle small', onclick: loadFirstPage }, 'Try again'));
  } else if (state.loading && empty) {
    message.replaceChildren(el('p', {}, 'Loading notes…'));
  } else if (empty && state.query) {
    message.replaceChildren(el('p', {}, `No notes match “${state.query}”.`));
  } else if (empty) {
    message.replaceChildren(el('p', { class: 'strong' }, 'No notes yet'),
      el('p', {}, 'Your notes will appear here, the last edited first.'),
      el('a', { href: '#/new', class: 'button primary small' }, 'Write your first note'));
  }

  const count = shown.length;
  const counted = `${count}${state.next ? '+' : ''}`;
  byId('list-status').textContent = state.loading || state.error ? ''
    : state.query ? `${counted} ${count === 1 && !state.next ? 'match' : 'matches'} for “${state.query}”`
      : count ? `${counted} ${count === 1 && !state.next ? 'note' : 'notes'}` : '';

  const more = byId('load-more');
  more.hidden = !state.next || state.loading;
  more.disabled = state.loadingMore;
  more.textContent = state.loadingMore ? 'Loading…' : 'Load more notes';
}

let searchTimer = null;
search.addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    const query = search.value.trim();
    if (query === state.query) return;
    state.query = query;
    loadFirstPage();
  }, 250);
});
byId('search-form').addEventListener('submit', (event) => {
  event.preventDefault();
  clearTimeout(searchTimer);
  state.query = search.value.trim();
  loadFirstPage();
});
byId('load-more').addEventListener('click', loadMore);

// Up and down arrows move between notes in the list.
listElement.addEventListener('keydown', (event) => {
  if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
  const links = [...listElement.querySelectorAll('.note-link')];
  const index = links.indexOf(document.activeElement);
  const next = links[index < 0 ? 0 : index + (event.key === 'ArrowDown' ? 1 : -1)];
  if (next) {
    event.preventDefault();
    next.focus();
  }
});

// MARK: - Messages

let toastTimer = null;
let toastTimeout = 0; // how long a notice stays once the keyboard is not on it
let toastFocus = null; // where the keyboard goes when a message it was on goes

/**
 * Shows `message`. An error (the default `kind`) stays until it is dismissed or a later success
 * makes it stale (`clearError`); a notice (`kind: 'info'`) goes after `timeout` ms. `action`
 * adds a button, `{ label, run }`, such as Undo. `focus`: the keyboard goes to the action at
 * once (its view just went, as after a delete), and the message stays while it is there; when
 * the message goes, the keyboard goes to `focus()` (an element) instead of the page's body.
 */
function toast(message, { kind = 'error', action = null, timeout = 6000, focus = null } = {}) {
  const element = byId('toast');
  const button = byId('toast-action');
  // A message in place of one the keyboard is on: the keyboard stays in it (on Dismiss, when
  // this one has no action), and goes where the first would have sent it once it goes.
  const keyboardHere = !element.hidden && element.contains(document.activeElement);
  byId('toast-text').textContent = message;
  button.hidden = !action;
  button.textContent = action?.label ?? '';
  button.onclick = action ? () => { hideToast(); action.run(); } : null;
  element.dataset.kind = kind;
  element.hidden = false;
  toastFocus = focus ?? (keyboardHere ? toastFocus : null);
  toastTimeout = kind === 'error' ? 0 : timeout;
  clearTimeout(toastTimer);
  if (focus && action) button.focus();
  else if (keyboardHere && !action) byId('toast-close').focus();
  if (toastTimeout && !element.contains(document.activeElement)) toastTimer = setTimeout(hideToast, toastTimeout);
}

function hideToast() {
  clearTimeout(toastTimer);
  const element = byId('toast');
  const focused = element.contains(document.activeElement);
  element.hidden = true;
  // Not the page's body: the keyboard goes on from where the message's view went.
  if (focused) (toastFocus?.() ?? listElement).focus();
  toastFocus = null;
}

// A notice does not go while the keyboard is on it (its action could not be reached in time
// otherwise); it goes `timeout` after the keyboard left it. Esc dismisses it.
byId('toast').addEventListener('focusin', () => clearTimeout(toastTimer));
byId('toast').addEventListener('focusout', (event) => {
  if (byId('toast').contains(event.relatedTarget) || byId('toast').hidden || !toastTimeout) return;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(hideToast, toastTimeout);
});
byId('toast').addEventListener('keydown', (event) => {
  if (event.key !== 'Escape') return;
  event.preventDefault();
  event.stopPropagation();
  hideToast();
});

/** After a success, an error shown before it is no longer true: it goes. */
function clearError() {
  if (byId('toast').dataset.kind === 'error') hideToast();
}
byId('toast-close').addEventListener('click', hideToast);

const CONNECTION = {
  connecting: ['Connecting…', 'Connecting to the server for live updates'],
  live: ['Live', 'Changes made elsewhere appear here as they happen'],
  reconnecting: ['Reconnecting…', 'The server can’t be reached; changes will appear once it is back'],
  offline: ['Offline', 'This device is offline; changes will appear once it is back online'],
};
/** The event stream's state, and the outbox's: `{ pending, held, reachable, synced }`. */
let liveState = 'connecting';
let outbox = { pending: 0, held: 0, reachable: true, synced: false };
function showConnection(name = liveState) {
  liveState = name;
  let [text, title] = CONNECTION[name];
  let shown = name;
  const { pending } = outbox;
  const waiting = `${pending} ${pending === 1 ? 'change' : 'changes'} waiting`;
  if (pending && (!outbox.reachable || name !== 'live')) {
    [shown, text, title] = ['offline', `Offline · ${waiting}`, 'Saved on this device; sent to the server once it can be reached'];
  } else if (pending) {
    [shown, text, title] = ['syncing', `Syncing · ${waiting}`, 'Sending what was saved on this device'];
  } else if (outbox.held) {
    // Never "Synced" while the server refused an edit: its text waits for the user, unsaved.
    const { held } = outbox;
    text = `${held} ${held === 1 ? 'change' : 'changes'} not saved`;
    title = 'The server refused an edit made on this device; its text is kept here: open the note and change it, and it is saved';
  } else if (outbox.synced && name === 'live') {
    [text, title] = ['Synced', 'Everything saved on this device is on the server'];
  }
  const element = byId('connection');
  element.dataset.state = shown;
  element.dataset.pending = String(pending);
  element.dataset.held = String(outbox.held ?? 0);
  element.title = title;
  byId('connection-text').textContent = text;
}

// MARK: - Routes

const sync = createSync({
  note(note, answer) {
    // Our own edit, answered (or a note our delete left): listed as any write is. A change pulled
    // from the feed only refreshes a listed note (the list's pages keep their order; a re-list
    // follows a break).
    if (answer.seq || answer.kept || notes.find(note.id)) notes.upsert(note);
    editor.synced(note, answer);
  },
  held(note) {
    notes.upsert(note);
    editor.held(note);
  },
  deleted(id) {
    notes.remove(id);
    editor.incoming('note.deleted', { id });
  },
  renamed(localID, note) {
    notes.remove(localID);
    editor.renamed(localID, note);
  },
  failed: (message) => toast(message),
  state(next) {
    outbox = next;
    showConnection();
  },
});
const editor = createEditor({ notes, navigate, toast, clearError, sync });
const files = createFiles({ notes, toast, clearError });
const trash = createTrash({ notes, navigate, toast, clearError });
let shownHash = location.hash;

/** Goes to `hash`; with `replace`, only records it (the editor already shows it). */
async function navigate(hash, { replace = false } = {}) {
  if (replace) {
    history.replaceState(null, '', hash || '#/');
    shownHash = location.hash;
    route(false);
  } else if (location.hash === hash) {
    // The address it has already ("New note" on a new note, whose first save may be on its way):
    // the editor is left as for any other address, once its save is done (the address then
    // names the note it created) and nothing unsaved is dropped.
    if (editor.isOpen() && !(await editor.canLeave())) return;
    if (location.hash === hash) route(true);
    else location.hash = hash;
  } else {
    location.hash = hash;
  }
}

window.addEventListener('hashchange', async () => {
  const target = location.hash;
  const leaving = shownHash !== target && editor.isOpen();
  if (leaving && !(await editor.canLeave())) {
    history.pushState(null, '', shownHash); // stay: put the address back
    return;
  }
  shownHash = location.hash;
  route(true);
});

/** Shows what the address names; `open` false only updates the list's highlight. */
function route(open) {
  const hash = location.hash;
  const match = NOTE_ROUTE.exec(hash);
  const previous = editor.id;
  const view = hash === '#/new' || match ? 'editor' : hash === '#/files' ? 'files' : hash === '#/trash' ? 'trash' : 'list';
  // First: on a phone only the view's pane is shown, and what opens next focuses inside it.
  document.body.dataset.view = view;
  if (open) {
    if (hash === '#/new') editor.openNew();
    else if (match) editor.openNote(match[1]);
    else editor.close();
    if (view === 'files') files.open();
    else files.close();
    if (view === 'trash') trash.open();
    else trash.close();
  }
  renderList();
  if (open && view === 'list' && previous) {
    // Back to the list: the keyboard continues from the note that was open.
    (listElement.querySelector(`.note-link[data-id="${CSS.escape(previous)}"]`) ?? listElement).focus();
  }
}

byId('new-note').addEventListener('click', () => navigate('#/new'));
byId('back').addEventListener('click', () => navigate('#/'));

window.addEventListener('keydown', (event) => {
  if (dialogOpen() || event.altKey) return;
  const typing = event.target.closest?.('input, textarea, select, [contenteditable]');
  const command = event.ctrlKey || event.metaKey;
  if (command && event.key.toLowerCase() === 's') {
    event.preventDefault();
    editor.save();
  } else if (event.key === 'Escape' && editor.isOpen() && !(typing && event.target === search)) {
    event.preventDefault();
    navigate('#/');
  } else if (!typing && !command && event.key === '/') {
    event.preventDefault();
    search.focus();
    search.select();
  } else if (!typing && !command && event.key.toLowerCase() === 'n') {
    event.preventDefault();
    navigate('#/new');
  }
});

window.addEventListener('beforeunload', (event) => {
  if (editor.isDirty()) event.preventDefault();
});

// MARK: - Live updates

/** Started once the notes can be shown (signed in, or no session needed). */
let live = null;

function startLive() {
  byId('connection').hidden = false;
  if (live) {
    live.reconnect();
    return;
  }
  live = connectLive({
    state: showConnection,
    // The stream was refused: a request tells whether the session ended (its 401 opens the
    // sign-in dialog, as a write's does), for the stream can't.
    ended: () => api.listNotes('/notes?limit=1').then(() => false, (error) => error.status === 401),
    event(kind, note) {
      if (kind === 'note.deleted') {
        notes.remove(note.id);
        store.removeNote(note.id).catch(() => {});
      }
      else if (kind === 'note.created') notes.upsert(note, { fresh: true });
      // One changed that is not listed yet goes first too: the pages still to load skip it now.
      else notes.upsert(note);
      editor.incoming(kind, note);
      trash.event(kind, note);
    },
    reload() {
      loadFirstPage();
      editor.refresh();
      sync.sync();
    },
    // Back after a break (EventSource reconnected by itself, replaying what it missed): what
    // waits in the outbox goes now, then what changed meanwhile comes.
    reconnected: () => {
      if (state.offline) loadFirstPage();
      editor.retrySave();
      sync.sync();
    },
  });
}

// MARK: - Start

let started = false;

/** Shows the notes: the list, the note or files the address names, and the live updates. */
async function start() {
  started = true;
  await editor.recover(); // text a page kept as it closed goes first (its note opens with it)
  loadFirstPage();
  route(true);
  startLive();
  sync.sync();
}

/**
 * Before signing out, which deletes this browser's copy of the notes: the text in the editor is
 * saved and what waits is sent. Changes that still can't reach the server are deleted only if
 * the user says so; false: stay signed in (they are sent once the server is back).
 */
async function signingOut() {
  if (editor.isDirty()) await editor.save();
  await sync.sync();
  let waiting;
  try {
    waiting = await store.outbox();
  } catch (error) {
    // Not known to be empty: what waits would be deleted unseen.
    console.error('jotter: the changes waiting on this device could not be read', error);
    const choice = await confirmChoice({
      title: 'Sign out and delete this device’s copy?',
      text: "This device's storage could not be read, so it can't tell whether changes made here are still "
        + 'waiting to be sent. Signing out deletes them if they are. Stay signed in, and they are sent once it can.',
      actions: [{ label: 'Stay signed in', value: null }, { label: 'Sign out anyway', value: 'delete', kind: 'danger' }],
    });
    return choice === 'delete';
  }
  const pending = waiting.length;
  if (!pending) return true;
  const changes = pending === 1 ? 'One change' : `${pending} changes`;
  // (An edit the server refused waits for the user to change it, not for the server.)
  const held = waiting.filter((entry) => entry.held).length;
  const why = held === pending ? `the server refused ${pending === 1 ? 'it' : 'them'} as written`
    : held ? `the server refused ${held} of them as written and can't be reached for the others`
      : "it can't be reached";
  const choice = await confirmChoice({
    title: 'Sign out and delete unsent changes?',
    text: `${changes} made on this device ${pending === 1 ? 'has' : 'have'} not reached the server yet: ${why}. `
      + `Signing out deletes ${pending === 1 ? 'it' : 'them'} from this device. Stay signed in, and `
      + (held === pending ? 'your text stays here.' : 'they are sent once the server is back.'),
    actions: [{ label: 'Stay signed in', value: null },
      { label: pending === 1 ? 'Sign out and delete it' : 'Sign out and delete them', value: 'delete', kind: 'danger' }],
  });
  return choice === 'delete';
}

// The app shell from the service worker's cache when the server can't be reached (sw.js).
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('/assets/sw.js', { scope: '/' }).catch(() => {
    // Not installable here (an untrusted certificate): the app works online as before.
  });
}

// Nothing is asked of the API before it is known whether a session is needed: a first visit
// under --auth required is a sign-in page, not a list that failed to load.
byId('connection').hidden = true;
setupAccount({
  signingOut,
  failed: (message) => toast(message),
  signedIn() {
    if (!started) {
      start();
      return;
    }
    loadFirstPage();
    startLive();
    editor.refresh();
    sync.sync();
  },
}).then((ready) => {
  if (ready) start();
});
